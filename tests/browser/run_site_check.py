"""Browser check of the static site (`python -m tools.site`): built, then read in headless Chromium offline.

Not collected by pytest (the name does not start with test_): it needs a browser. About a minute on the 2-core
machine, most of it building the site (every notebook; `--site DIR` checks an existing build instead).

Setup (Debian/Ubuntu; once), as for tests/browser/run_explorer_check.py:

    sudo apt-get install -y chromium chromium-driver      # /usr/bin/chromium and /usr/bin/chromedriver

Run from the repository root:

    .venv/bin/python tests/browser/run_site_check.py [--site DIR] [--page 06_heatmaps] [--screenshot PNG] [--keep]

What it does (exit 0, or 1 with the reason):
  1. builds the site into a temp folder with `python -m tools.site --output DIR` (the build itself fails if a
     page would load anything from the network);
  2. starts chromedriver + headless Chromium with the network cut off: every host name resolves to nothing
     (`--host-resolver-rules=MAP * ~NOTFOUND`) and every connection goes to a closed proxy port; pages are opened
     as file:// URLs, the way a student opens a handed-out folder;
  3. index.html: one entry per notebook, each linking to a page and a deck that exist, and the solutions link;
  4. the notebook page (default 06_heatmaps: maths, figures and the explorer's static fallback): MathJax has
     typeset (MathJax elements present, none in error, no raw `$$` or `$\\command` left in the rendered
     markdown), MathJax's web font loaded, every figure decoded (img naturalWidth > 0), the widget note shown;
  5. the same notebook's slides: reveal.js ready, several slides, the speaker-notes plugin loaded;
  6. solutions.html: one entry with source for every checker of course_utils.exercises.solutions.SOLUTIONS;
  7. on every page: no resource requested outside file:// and data: (Resource Timing) and no error in the browser
     console (a missing local file, a script error); then saves a screenshot of the notebook page;
  8. where the site has session decks (session-N.slides.html, built from cells tagged `lecture`): every slide of
     each fits 1280x720 (tests/browser/run_deck_check.py, which also runs on its own).
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # webdriver.py beside this file, also when imported
from webdriver import CHROMEDRIVER, CHROMIUM, CheckFailed, WebDriver, headless_chromium  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
OFFLINE_ARGS = ["--host-resolver-rules=MAP * ~NOTFOUND", "--proxy-server=127.0.0.1:9",
                "--proxy-bypass-list=<-loopback>", "--disable-background-networking", "--disable-component-update",
                "--disable-default-apps", "--disable-sync", "--no-first-run"]


RESOURCES_JS = ("return performance.getEntriesByType('resource').map(e => e.name)"
                ".filter(n => !n.startsWith('file:') && !n.startsWith('data:') && !n.startsWith('blob:'));")


def check_page_hygiene(browser: WebDriver, page: str, ignore: tuple[str, ...] = ()) -> None:
    """No request left the machine and the console has no error (a missing file, a script error) but for messages
    containing one of `ignore` (MathJax 2's MathJax_Blank probe font, about:blank, is ignored by design)."""
    remote = browser.run_js(RESOURCES_JS)
    if remote:
        raise CheckFailed(f"{page} requested resources outside the site: {remote[:5]}")
    errors = [entry["message"] for entry in browser.console() if entry.get("level") == "SEVERE"
              and not any(known in entry["message"] for known in ("about:blank", *ignore))]
    if errors:
        raise CheckFailed(f"{page}: errors in the browser console: {errors[:5]}")


def check_index(browser: WebDriver, site: Path) -> list[str]:
    browser.get((site / "index.html").as_uri())
    entries = browser.wait_js("var s = document.querySelectorAll('section.notebook'); return s.length ? "
                              "Array.from(s).map(e => [e.id, Array.from(e.querySelectorAll('a')).map(a => "
                              "a.getAttribute('href'))]) : null;", 20, "index.html shows no notebook entries")
    expected = sorted(path.stem for path in site.glob("*.html") if not path.name.endswith(".slides.html")
                      and path.stem not in ("index", "solutions"))
    if sorted(stem for stem, _ in entries) != expected:
        raise CheckFailed(f"index.html lists {[stem for stem, _ in entries]}, the site has pages {expected}")
    for stem, links in entries:
        for link in (f"{stem}.html", f"{stem}.slides.html"):
            if link not in links or not (site / link).is_file():
                raise CheckFailed(f"index.html: the entry of {stem} has no working link to {link} ({links})")
    if not browser.run_js("return !!document.querySelector('a[href=\"solutions.html\"]');"):
        raise CheckFailed("index.html has no link to solutions.html")
    check_page_hygiene(browser, "index.html")
    return expected


TYPESET_JS = """
if (!window.MathJax || !MathJax.Hub) { return null; }
if (!window.__courseQueued) { window.__courseQueued = true;
  MathJax.Hub.Queue(function () { window.__courseTypeset = true; }); }
return window.__courseTypeset ? true : null;
"""

MATH_JS = r"""
var markdown = Array.from(document.querySelectorAll('.jp-RenderedMarkdown, .jp-MarkdownOutput'));
var text = markdown.map(function (e) { return e.innerText; }).join('\n');
var raw = text.match(/\$\$|\$\s*\\[A-Za-z]+/g) || [];
return {rendered: document.querySelectorAll('.MathJax, .MathJax_Display, .MathJax_CHTML, mjx-container').length,
        sources: document.querySelectorAll('script[type^="math/tex"]').length,
        errors: document.querySelectorAll('.MathJax_Error, merror, .mjx-merror').length,
        raw: raw.slice(0, 5), fontWarning: !!document.getElementById('MathJax_Font_Warning'),
        webFont: document.fonts ? Array.from(document.fonts).filter(function (f) {
            return /STIX/i.test(f.family) && f.status === 'loaded'; }).length : -1};
"""

IMAGES_JS = """
var images = Array.from(document.images);
return {total: images.length, complete: images.every(function (i) { return i.complete; }),
        broken: images.filter(function (i) { return !(i.naturalWidth > 0); }).map(function (i) {
            return i.src.slice(0, 60); })};
"""


def check_notebook_page(browser: WebDriver, site: Path, stem: str, screenshot: Path | None) -> dict:
    page = f"{stem}.html"
    browser.get((site / page).as_uri())
    browser.wait_js(TYPESET_JS, 60, f"{page}: MathJax did not load or finish typesetting")
    maths = browser.run_js(MATH_JS)
    if maths["rendered"] == 0 or maths["sources"] == 0:
        raise CheckFailed(f"{page}: no typeset maths (MathJax elements {maths['rendered']}, sources "
                          f"{maths['sources']}): does the notebook have no $...$ or did MathJax not run?")
    if maths["errors"] or maths["raw"]:
        raise CheckFailed(f"{page}: maths not rendered: {maths['errors']} MathJax errors, raw TeX {maths['raw']}")
    if maths["fontWarning"] or maths["webFont"] == 0:
        raise CheckFailed(f"{page}: MathJax's web font did not load (warning shown: {maths['fontWarning']})")
    images = browser.wait_js(f"var r = (function () {{ {IMAGES_JS} }})(); return r.complete ? r : null;", 30,
                             f"{page}: the figures did not finish loading")
    if images["total"] == 0 or images["broken"]:
        raise CheckFailed(f"{page}: {images['total']} images, not decoded: {images['broken'][:3]}")
    widget_notes = browser.run_js("return document.querySelectorAll('.course-widget-note').length;")
    if "widget-view" in (site / page).read_text(encoding="utf-8"):
        raise CheckFailed(f"{page} still holds a widget view, which cannot render without a kernel")
    check_page_hygiene(browser, page)
    if screenshot:
        browser.screenshot(screenshot)
    return {"maths": maths["rendered"], "images": images["total"], "widget_notes": widget_notes}


def check_slides(browser: WebDriver, site: Path, stem: str) -> dict:
    page = f"{stem}.slides.html"
    browser.get((site / page).as_uri())
    deck = browser.wait_js("return (window.Reveal && Reveal.isReady()) ? {slides: document.querySelectorAll("
                           "'.reveal .slides > section').length, sub: document.querySelectorAll('.reveal .slides "
                           "section > section').length, notes: !!Reveal.getPlugin('notes'), total: "
                           "Reveal.getTotalSlides()} : null;", 30, f"{page}: reveal.js did not start")
    if deck["slides"] < 2 or not deck["notes"]:
        raise CheckFailed(f"{page}: {deck['slides']} slides, notes plugin {deck['notes']}")
    browser.wait_js(TYPESET_JS, 60, f"{page}: MathJax did not finish typesetting")
    check_page_hygiene(browser, page)
    return deck


def check_solutions(browser: WebDriver, site: Path) -> int:
    from course_utils.exercises.solutions import SOLUTIONS

    browser.get((site / "solutions.html").as_uri())
    listed = browser.wait_js("var e = document.querySelectorAll('.exercise'); return e.length ? Array.from(e).map("
                             "x => [x.id, !!x.querySelector('.highlight')]) : null;", 20,
                             "solutions.html shows no exercise")
    with_source = {name for name, has_source in listed if has_source}
    missing = sorted(set(SOLUTIONS) - with_source)
    if missing:
        raise CheckFailed(f"solutions.html has no reference solution shown for {missing}")
    check_page_hygiene(browser, "solutions.html")
    return len(with_source)


def build(site: Path) -> float:
    start = time.monotonic()
    result = subprocess.run([sys.executable, "-m", "tools.site", "--output", str(site)], cwd=REPO,
                            capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=str(REPO)))
    if result.returncode != 0:
        raise CheckFailed(f"`python -m tools.site --output {site}` failed:\n{result.stdout}{result.stderr}")
    return time.monotonic() - start


def check(site: Path | None, stem: str, screenshot: Path | None, chromium: str, chromedriver: str,
          keep: bool) -> str:
    folder = Path(tempfile.mkdtemp(prefix="site-check-"))
    try:
        with headless_chromium(chromium, chromedriver, window=(1400, 1100),
                               extra_args=["--allow-file-access-from-files", *OFFLINE_ARGS],
                               logging_prefs={"browser": "ALL"}) as browser:  # first: a missing browser fails fast
            built = ""
            if site is None:
                site = folder / "site"
                built = f"built in {build(site):.0f} s; "
            site = site.resolve()
            pages = check_index(browser, site)
            if stem not in pages:
                raise CheckFailed(f"no page {stem}.html in the site (pages: {pages})")
            page = check_notebook_page(browser, site, stem, screenshot)
            deck = check_slides(browser, site, stem)
            solved = check_solutions(browser, site)
            decks = "no session decks (no cell tagged `lecture` yet)"
            if list(site.glob("session-*.slides.html")):
                from run_deck_check import check_session_decks

                decks = check_session_decks(browser, site)
            return (f"{built}index lists {len(pages)} notebooks; {stem}.html: {page['maths']} MathJax elements, "
                    f"{page['images']} figures decoded, {page['widget_notes']} widget note(s); slides: "
                    f"{deck['slides']} slides + {deck['sub']} sub-slides, notes plugin; solutions: {solved} reference "
                    f"solutions; {decks}; no request outside file://, no console error")
    finally:
        if keep:
            print(f"kept {folder}")
        else:
            shutil.rmtree(folder, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--site", type=Path, default=None, help="check this built site instead of building one")
    parser.add_argument("--page", default="06_heatmaps", help="the notebook whose page and slides are opened")
    parser.add_argument("--screenshot", type=Path, default=Path(tempfile.gettempdir()) / "site_screenshot.png")
    parser.add_argument("--chromium", default=CHROMIUM)
    parser.add_argument("--chromedriver", default=CHROMEDRIVER)
    parser.add_argument("--keep", action="store_true", help="keep the temp folder (the built site)")
    args = parser.parse_args()
    if not re.fullmatch(r"[\w.-]+", args.page):
        parser.error("--page takes a notebook's file stem, such as 06_heatmaps")
    try:
        summary = check(args.site, args.page, args.screenshot, args.chromium, args.chromedriver, args.keep)
    except CheckFailed as error:
        print(f"FAILED: {error}")
        return 1
    print(f"OK: site read offline in headless Chromium: {summary}; screenshot {args.screenshot}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
