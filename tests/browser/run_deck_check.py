"""Browser check of the condensed session decks (site/session-N.slides.html): every slide fits a 1280x720 screen.

Not collected by pytest (the name does not start with test_): it needs a browser (chromium, chromium-driver, as
for tests/browser/run_site_check.py, which also runs `check_session_decks` on the site it builds when that site
has session decks).

    .venv/bin/python tests/browser/run_deck_check.py [--site DIR] [--keep]

Without --site it copies notebooks/*.ipynb into a temp folder, writes the lecture plan's tags into the copies
(`python -m tools.site.lecture_plan --apply`), builds the site from them, then, in headless Chromium
with the network cut off, opens each session-N.slides.html, visits every slide (reveal.js's own navigation),
lets MathJax re-typeset it and measures the union of the boxes of everything on it (speaker notes left out),
in the slide's own 1280x720 coordinates, and any element that scrolls or clips its content. Exit 1 naming every
slide (its number and heading) whose content box exceeds 1280x720, or a deck with more than 30 slides.
"""
from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run_site_check import OFFLINE_ARGS, REPO, TYPESET_JS, check_page_hygiene  # noqa: E402
from webdriver import CHROMEDRIVER, CHROMIUM, CheckFailed, WebDriver, headless_chromium  # noqa: E402

WIDTH, HEIGHT, MAX_SLIDES = 1280, 720, 30

READY_JS = ("return (window.Reveal && Reveal.isReady()) ? Reveal.getSlides().map(function (s) { "
            "var i = Reveal.getIndices(s); return [i.h, i.v || 0]; }) : null;")

RERENDER_JS = """
var slide = Reveal.getCurrentSlide(); window.__courseRerendered = false;
if (window.MathJax && MathJax.Hub) {
  MathJax.Hub.Queue(["Rerender", MathJax.Hub, slide], function () { window.__courseRerendered = true; });
} else { window.__courseRerendered = true; }
"""

MEASURE_JS = """
var slide = Reveal.getCurrentSlide(), scale = Reveal.getScale();
var box = null, clipped = [];
slide.querySelectorAll('*').forEach(function (e) {
  if (e.closest('aside.notes, .MJX_Assistive_MathML, .MathJax_Preview') || /^(SCRIPT|STYLE)$/.test(e.tagName)) {
    return;
  }
  var style = getComputedStyle(e);
  if (style.display === 'none' || style.visibility === 'hidden') { return; }
  var r = e.getBoundingClientRect();
  if (r.width === 0 && r.height === 0) { return; }
  box = box ? {l: Math.min(box.l, r.left), t: Math.min(box.t, r.top), r: Math.max(box.r, r.right),
               b: Math.max(box.b, r.bottom)} : {l: r.left, t: r.top, r: r.right, b: r.bottom};
  var scrolls = /(auto|scroll|hidden)/.test(style.overflowX + style.overflowY);
  if (scrolls && e !== slide && (e.scrollWidth > e.clientWidth + 2 || e.scrollHeight > e.clientHeight + 2)) {
    clipped.push(e.tagName.toLowerCase() + '.' + (e.className || '').toString().split(' ')[0] + ' ' +
                 e.scrollWidth + 'x' + e.scrollHeight + ' in ' + e.clientWidth + 'x' + e.clientHeight);
  }
});
var heading = slide.querySelector('h1, h2, h3');
return {width: box ? (box.r - box.l) / scale : 0, height: box ? (box.b - box.t) / scale : 0,
        clipped: clipped.slice(0, 3), title: heading ? heading.textContent.replace(/¶/g, '').trim().slice(0, 70)
        : (slide.textContent || '').trim().slice(0, 50)};
"""


# MathJax 2 re-typesetting a slide (the decks do on every slide change) first tries the TeX fonts' local .otf files,
# which the site does not ship (it uses STIX-Web, which then loads): a console error to ignore.
TEX_FONT_PROBE = "/fonts/HTML-CSS/TeX/otf/"


def check_deck(browser: WebDriver, site: Path, name: str) -> tuple[int, list[str]]:
    """Visit every slide of one deck; returns (slides, problems), each problem naming its slide."""
    browser.get((site / name).as_uri())
    indices = browser.wait_js(READY_JS, 30, f"{name}: reveal.js did not start")
    browser.wait_js(TYPESET_JS, 60, f"{name}: MathJax did not finish typesetting")
    problems = []
    for number, (h, v) in enumerate(indices, 1):
        browser.run_js(f"Reveal.slide({h}, {v});")
        browser.run_js(RERENDER_JS)
        browser.wait_js("return window.__courseRerendered === true;", 30, f"{name} slide {number}: MathJax stuck")
        size = browser.run_js(MEASURE_JS)
        label = f"{name} slide {number} ({h}/{v}) \"{size['title']}\""
        if size["width"] > WIDTH + 1 or size["height"] > HEIGHT + 1:
            problems.append(f"{label}: content {size['width']:.0f}x{size['height']:.0f} exceeds {WIDTH}x{HEIGHT}")
        if size["clipped"]:
            problems.append(f"{label}: content scrolls or is clipped: {size['clipped']}")
    if len(indices) > MAX_SLIDES:
        problems.append(f"{name}: {len(indices)} slides, more than {MAX_SLIDES}")
    check_page_hygiene(browser, name, ignore=(TEX_FONT_PROBE,))
    return len(indices), problems


def check_session_decks(browser: WebDriver, site: Path) -> str:
    """Every session deck of a built site; raises CheckFailed listing each slide that overflows."""
    browser.set_window(1280, 800)  # reveal.js scales the 1280x720 slide down a little (a transform, measured back)
    decks = sorted(path.name for path in site.glob("session-*.slides.html"))
    if not decks:
        raise CheckFailed(f"no session-*.slides.html in {site}: no cell is tagged `lecture` (run `python -m "
                          "tools.site.lecture_plan --apply notebooks/*.ipynb`)")
    counts, problems = {}, []
    for name in decks:
        counts[name], found = check_deck(browser, site, name)
        problems += found
    if problems:
        raise CheckFailed("slides that do not fit a 1280x720 screen:\n  " + "\n  ".join(problems))
    return ", ".join(f"{name}: {count} slides" for name, count in counts.items()) + ", every one within 1280x720"


def build_tagged(folder: Path) -> Path:
    """Copies of notebooks/*.ipynb with the lecture plan applied, built into folder/site."""
    copies = folder / "notebooks"
    copies.mkdir(parents=True)
    for path in sorted((REPO / "notebooks").glob("*.ipynb")):
        shutil.copy(path, copies / path.name)
    notebooks = sorted(str(path) for path in copies.glob("*.ipynb"))
    for command in (["-m", "tools.site.lecture_plan", "--apply", *notebooks],
                    ["-m", "tools.site", "--output", str(folder / "site"), "--notebooks", *notebooks]):
        result = subprocess.run([sys.executable, *command], cwd=REPO, capture_output=True, text=True)
        if result.returncode != 0:
            raise CheckFailed(f"`python {' '.join(command[:3])} ...` failed:\n{result.stdout}{result.stderr}")
    return folder / "site"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--site", type=Path, default=None, help="check this built site instead of building one")
    parser.add_argument("--keep", action="store_true", help="keep the temp folder (the tagged copies, the site)")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="deck-check-"))
    try:
        with headless_chromium(CHROMIUM, CHROMEDRIVER, window=(1280, 800), logging_prefs={"browser": "ALL"},
                               extra_args=["--allow-file-access-from-files", *OFFLINE_ARGS]) as browser:
            site = (args.site or build_tagged(folder)).resolve()
            summary = check_session_decks(browser, site)
    except CheckFailed as error:
        print(f"FAILED: {error}")
        return 1
    finally:
        if args.keep:
            print(f"kept {folder}")
        else:
            shutil.rmtree(folder, ignore_errors=True)
    print(f"OK: session decks in headless Chromium: {summary}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
