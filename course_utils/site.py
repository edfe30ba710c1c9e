"""The course as a static site that reads with no Python and no network: `python -m course_utils site --output DIR`.

    python -m course_utils site --output site/               # every notebook of notebooks/, slides, solutions
    python -m course_utils site --output site/ --no-solutions    # the students' copy: no answer key
    python -m course_utils site --output /tmp/s --notebooks notebooks/01_data.ipynb   # only some notebooks

What DIR holds (open DIR/index.html in a browser, from disk or any web server):

    index.html            the notebooks, each with its title, what it teaches (its first paragraph and the
                          "Builds on"/"Prerequisites"/"Time" lines of its first cell) and links to its page and slides
    NN_name.html          the executed notebook as it is stored (nbconvert's HTMLExporter, JupyterLab look)
    NN_name.slides.html   the same notebook as reveal.js slides (nbconvert's SlidesExporter; slide types from
                          course_utils.slides, so the deck exists even before the notebooks carry the metadata;
                          key `s` opens the speaker view with the notes)
    solutions.html        for lecturers: every exercise's checker, its docstring and the reference solution's
                          source (course_utils.exercises.solutions.SOLUTIONS); left out with --no-solutions
    _static/mathjax/      MathJax 2.7.9 copied from the PyPI package jupyter-server-mathjax (requirements.txt)
    _static/reveal.js/    reveal.js 4.6.1, the subset vendored in course_utils/site_static/ (MIT)

Nothing is executed: the pages show the outputs stored in the notebooks, figures embedded as PNG. Widgets need a
kernel, so a widget output (06's explorer) is replaced by a note; the notebook's own static fallback
(`show_static`) is a stored PNG and shows. Every page written is scanned for resources loaded from elsewhere
(script/link/img/iframe sources, CSS url()/@import, JavaScript imports) and the build fails if one is found
(`remote_resources`); tests/browser/run_site_check.py opens the result in headless Chromium with no network.

Introduced in: the lecture kit (issue 14); not used by the notebooks themselves.
"""
from __future__ import annotations

import argparse
import copy
import html
import inspect
import multiprocessing
import os
import re
import shutil
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
NOTEBOOKS = REPO / "notebooks"
VENDORED = Path(__file__).resolve().parent / "site_static"
STATIC = "_static"
MATHJAX_CONFIG = "TeX-AMS-MML_HTMLorMML-full,Safe"  # the combined configuration jupyter-server-mathjax ships
# What MathJax 2 loads with that configuration and the STIX-Web fonts; the SVG output and the translations of its
# menu (7 MB together) are not needed.
MATHJAX_PARTS = ("MathJax.js", "LICENSE", "config", "extensions", "jax/element", "jax/input", "jax/output/HTML-CSS",
                 "fonts/HTML-CSS/STIX-Web/woff")
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
WIDGET_NOTE = ('<p class="course-widget-note"><em>An interactive widget was here: it needs a running kernel. Open '
               'the notebook in JupyterLab to use it; the static pictures on this page show what it draws.</em></p>')
SUMMARY_LINES = ("**Builds on", "**Prerequisites", "**Prerequisite", "**Time", "**Reading time", "**Run time")


class SiteError(RuntimeError):
    """The site cannot be built, or a page it built would load something from the network."""


# ------------------------------------------------------------------------------------------- remote resources
class _ResourceParser(HTMLParser):
    """Collects every URL a page would fetch by itself: element sources, stylesheets, CSS and JavaScript imports."""

    SOURCES = {"script": ("src",), "link": ("href",), "img": ("src", "srcset"), "iframe": ("src",),
               "source": ("src", "srcset"), "video": ("src", "poster"), "audio": ("src",), "embed": ("src",),
               "object": ("data",), "track": ("src",), "input": ("src",), "image": ("href", "xlink:href"),
               "use": ("href", "xlink:href")}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.urls: list[str] = []
        self._in: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if value is None:
                continue
            if name in self.SOURCES.get(tag, ()):
                self.urls.extend(part.strip().split(" ")[0] for part in value.split(",")) if name == "srcset" \
                    else self.urls.append(value.strip())
            elif name == "style":
                self.urls.extend(css_urls(value))
        if tag in ("script", "style"):
            self._in = tag

    def handle_endtag(self, tag: str) -> None:
        if tag == self._in:
            self._in = None

    def handle_data(self, data: str) -> None:
        if self._in == "style":
            self.urls.extend(css_urls(data))
        elif self._in == "script":
            self.urls.extend(script_urls(data))


_DATA_URI = re.compile(r"data:[^\"')\s]*")
_CSS_URL = re.compile(r"""url\(\s*["']?([^"')\s]+)|@import\s+["']([^"']+)""")
_JS_URL = re.compile(r"""(?:\bfrom|\bimport\s*\(|\bimportScripts\s*\(|\bsrc\s*=|\bhref\s*=|\burl\s*\(|"""
                     r"""\brequire\s*\(\s*\[?|\bfetch\s*\()\s*["'`]\s*((?:https?:)?//[^"'`\s]+)""")


def css_urls(css: str) -> list[str]:
    """The URLs a piece of CSS loads (url(...) and @import), data: URIs left out."""
    return [a or b for a, b in _CSS_URL.findall(_DATA_URI.sub("data:", css)) if not (a or b).startswith("data:")]


def script_urls(script: str) -> list[str]:
    """URLs that a piece of JavaScript loads in the usual ways (import, src=, require([...]), fetch)."""
    return _JS_URL.findall(script)


def is_remote(url: str) -> bool:
    return bool(re.match(r"(?:[a-zA-Z][a-zA-Z0-9+.-]*:)?//", url)) and not url.lower().startswith("file:")


def remote_resources(page: str) -> list[str]:
    """Every URL in the HTML text `page` that the browser would fetch from another host (http(s)://...,
    protocol-relative //...). Links the reader may click (<a href>) are not fetched and not listed."""
    parser = _ResourceParser()
    parser.feed(page)
    parser.close()
    return sorted({url for url in parser.urls if is_remote(url)})


def check_offline(folder: Path) -> None:
    """Raise SiteError naming every page under `folder` that would load a remote resource, and what."""
    found = {str(path.relative_to(folder)): urls for path in sorted(folder.rglob("*.html"))
             if not path.relative_to(folder).parts[0] == STATIC
             for urls in [remote_resources(path.read_text(encoding="utf-8"))] if urls}
    if found:
        lines = [f"  {page}: {', '.join(urls[:5])}{' ...' if len(urls) > 5 else ''}" for page, urls in found.items()]
        raise SiteError("pages that would load resources from the network (the site must read offline):\n"
                        + "\n".join(lines))


# ------------------------------------------------------------------------------------------- notebooks
@dataclass(frozen=True)
class NotebookEntry:
    """One notebook of the site: its file stem, title and the summary shown on the index."""

    stem: str
    title: str
    summary_markdown: str

    @property
    def page(self) -> str:
        return f"{self.stem}.html"

    @property
    def slides(self) -> str:
        return f"{self.stem}.slides.html"


def _source(cell: dict[str, Any]) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


def describe(notebook: dict[str, Any], stem: str) -> NotebookEntry:
    """Title (the first `# ` heading) and summary (the first paragraph after it, then the first cell's
    "Builds on"/"Prerequisites"/"Time" paragraphs) of a notebook."""
    first = next((_source(cell) for cell in notebook.get("cells", []) if cell.get("cell_type") == "markdown"), "")
    paragraphs = [part.strip() for part in re.split(r"\n\s*\n", first) if part.strip()]
    title = stem
    if paragraphs and paragraphs[0].startswith("# "):
        title = paragraphs.pop(0)[2:].strip()
    body = [part for part in paragraphs if not part.startswith("#")]
    summary = body[:1] + [part for part in body[1:] if part.startswith(SUMMARY_LINES)]
    return NotebookEntry(stem, title, "\n\n".join(summary))


def prepare(notebook: dict[str, Any]) -> dict[str, Any]:
    """A copy of the notebook ready to export: slide types set (course_utils.slides), widget state dropped and
    each widget output replaced by a note (a static page has no kernel; 06's static fallback is a stored PNG)."""
    from course_utils.slides import add_slide_metadata

    notebook = add_slide_metadata(copy.deepcopy(notebook))
    notebook.get("metadata", {}).pop("widgets", None)
    for cell in notebook.get("cells", []):
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if WIDGET_MIME in data:
                output["data"] = {"text/html": WIDGET_NOTE}
    return notebook


# ------------------------------------------------------------------------------------------- templates
def _mathjax_head(prefix: str) -> str:
    """Local MathJax 2 with the configuration of nbconvert's template, STIX-Web fonts (those shipped)."""
    return f"""
<script type="text/x-mathjax-config">
MathJax.Hub.Config({{
  TeX: {{equationNumbers: {{autoNumber: "AMS", useLabelIds: true}}}},
  tex2jax: {{inlineMath: [['$', '$'], ["\\\\(", "\\\\)"]], displayMath: [['$$', '$$'], ["\\\\[", "\\\\]"]],
            processEscapes: true, processEnvironments: true}},
  displayAlign: "center", messageStyle: "none",
  "HTML-CSS": {{availableFonts: [], imageFont: null, preferredFont: null, webFont: "STIX-Web",
               linebreaks: {{automatic: true}}}},
  MathMenu: {{showLocale: false}}
}});
</script>
<script src="{prefix}{STATIC}/mathjax/MathJax.js?config={MATHJAX_CONFIG}"></script>
"""


NAV_CSS = """
<style type="text/css">
nav.course-nav { font-family: var(--jp-ui-font-family, sans-serif); font-size: 14px; padding: 8px 16px;
  border-bottom: 1px solid #ddd; background: #f7f7f7; }
nav.course-nav a { margin-right: 1.2em; }
.course-widget-note { color: #555; }
</style>
"""

LAB_TEMPLATE = """{%- extends 'index.html.j2' -%}
{%- block html_head_js -%}{%- endblock html_head_js -%}
{%- block html_head_js_mermaidjs -%}{%- endblock html_head_js_mermaidjs -%}
{%- block html_head_js_mathjax -%}{{ resources.course.mathjax_head }}{%- endblock html_head_js_mathjax -%}
{%- block extra_css -%}""" + NAV_CSS + """{%- endblock extra_css -%}
{%- block body_header -%}
{{ super() }}
<nav class="course-nav"><a href="index.html">&larr; all notebooks</a>
<a href="{{ resources.course.slides }}">slides</a>{{ resources.course.solutions_link }}</nav>
{%- endblock body_header -%}
"""

REVEAL_TEMPLATE = """{%- extends 'index.html.j2' -%}
{%- block html_head_js -%}{%- endblock html_head_js -%}
{%- block html_head_js_mathjax -%}{{ resources.course.mathjax_head }}{%- endblock html_head_js_mathjax -%}
{%- block footer_js -%}
<script src="{{ resources.course.reveal }}/dist/reveal.js"></script>
<script src="{{ resources.course.reveal }}/plugin/notes/notes.js"></script>
<script>
Reveal.initialize({
  controls: true, progress: true, history: true, slideNumber: "c/t",
  transition: "{{ resources.reveal.transition | default('slide', true) }}",
  width: {{ resources.reveal.width | default('960', true) }},
  height: {{ resources.reveal.height | default('700', true) }},
  plugins: [RevealNotes]
});
function courseRerender() {
  var slide = Reveal.getCurrentSlide();
  if (window.MathJax && MathJax.Hub && slide) { MathJax.Hub.Queue(["Rerender", MathJax.Hub, slide]); }
}
function courseScroll() {  /* a slide taller than the screen scrolls (nbconvert's reveal_scroll, without jQuery) */
  var limit = document.querySelector(".reveal").clientHeight * 0.95;
  document.querySelectorAll("section.present section, section.present").forEach(function (section) {
    if (section.scrollHeight > limit) {
      section.style.height = "calc(95vh)"; section.style.overflowY = "auto"; section.style.marginTop = "20px";
    }
  });
}
Reveal.on("slidechanged", function () { courseRerender(); courseScroll(); });
Reveal.on("ready", courseScroll);
</script>
{%- endblock footer_js -%}
"""


def _trusted_html(element):
    """nbconvert's clean_html filter for trusted notebooks: the HTML as it is (bytes decoded, as clean_html does)."""
    return element.decode() if isinstance(element, bytes) else element


def _exporters():
    """The page and slides exporters (made once per build: loading a template takes a while)."""
    from jinja2 import DictLoader
    from nbconvert import HTMLExporter, SlidesExporter

    loader = DictLoader({"course_lab.html.j2": LAB_TEMPLATE, "course_reveal.html.j2": REVEAL_TEMPLATE})
    # The notebooks are the course's own: nbconvert's bleach pass over every cell (`clean_html`, a third of the
    # build time) is skipped; check_offline still rejects any remote resource an output would load.
    trusted = {"clean_html": _trusted_html}
    page = HTMLExporter(template_name="lab", extra_loaders=[loader], template_file="course_lab.html.j2",
                        filters=trusted)
    slides = SlidesExporter(template_name="reveal", extra_loaders=[loader], template_file="course_reveal.html.j2",
                            reveal_theme="white", reveal_url_prefix=f"{STATIC}/reveal.js", filters=trusted)
    return page, slides


# ------------------------------------------------------------------------------------------- pages
PAGE_CSS = """
body { font-family: -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; max-width: 56em; margin: 2em auto;
  padding: 0 1em; line-height: 1.5; color: #222; }
h1 { font-size: 1.9em; margin-bottom: 0.2em; } h2 { margin-top: 1.6em; border-bottom: 1px solid #ddd; }
.lead { color: #555; margin-top: 0; }
.notebook { margin: 1.4em 0; padding: 0.6em 1em; border-left: 4px solid #4a7ab5; background: #f8f9fb; }
.notebook h2 { border: none; margin: 0.2em 0; font-size: 1.3em; }
.links a { margin-right: 1.2em; font-weight: 600; }
code, pre { font-family: Menlo, Consolas, "DejaVu Sans Mono", monospace; font-size: 0.92em; }
pre.doc { white-space: pre-wrap; background: #fafafa; border: 1px solid #eee; padding: 0.6em; }
.exercise { margin: 1.2em 0 2em; }
.highlight { background: #f6f8fa; border: 1px solid #e3e6ea; padding: 0.2em 0.8em; overflow-x: auto; }
.missing { color: #a33; }
"""


def _page(title: str, body: str, mathjax: bool = False, head: str = "") -> str:
    return (f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8" />\n'
            f'<meta name="viewport" content="width=device-width, initial-scale=1.0">\n<title>{html.escape(title)}'
            f'</title>\n<style type="text/css">{PAGE_CSS}</style>\n{head}'
            f'{_mathjax_head("") if mathjax else ""}</head>\n<body>\n{body}\n</body>\n</html>\n')


def index_page(entries: list[NotebookEntry], solutions: bool) -> str:
    """The index: every notebook with what it teaches and links to its page and its slides."""
    from nbconvert.filters import markdown2html

    items = []
    for entry in entries:
        items.append(f'<section class="notebook" id="{html.escape(entry.stem)}">\n'
                     f'<h2><a href="{entry.page}">{html.escape(entry.title)}</a></h2>\n'
                     f'{markdown2html(entry.summary_markdown)}\n'
                     f'<p class="links"><a href="{entry.page}">read the notebook</a>'
                     f'<a href="{entry.slides}">slides</a></p>\n</section>')
    lecturers = ('<h2>For lecturers</h2>\n<p><a href="solutions.html">Solutions</a>: every exercise\'s checker '
                 'and its reference solution.</p>') if solutions else ""
    body = ('<h1>Dissecting Attention</h1>\n<p class="lead">A sequence-to-sequence translator (GRU encoder, '
            'attention decoder, French to English) taken apart, one notebook at a time. These pages show the '
            'notebooks as they were run; no Python and no network are needed to read them. Slides: arrow keys to '
            'move, <kbd>s</kbd> for the speaker notes, <kbd>f</kbd> for full screen.</p>\n'
            + "\n".join(items) + f"\n{lecturers}")
    return _page("Dissecting Attention", body, mathjax=True)


def solutions_page() -> str:
    """For lecturers: per notebook, each checker's name and docstring and its reference solution's source."""
    from pygments import highlight
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import PythonLexer

    from course_utils import exercises
    from course_utils.exercises import solutions

    checkers = {name: getattr(exercises, name) for name in dir(exercises) if name.startswith("check_")
                and callable(getattr(exercises, name))}
    names = list(solutions.SOLUTIONS) + sorted(set(checkers) - set(solutions.SOLUTIONS))
    by_module: dict[str, list[str]] = {}
    for name in names:
        module = getattr(checkers.get(name), "__module__", "course_utils.exercises").rsplit(".", 1)[-1]
        by_module.setdefault(module, []).append(name)
    formatter = HtmlFormatter()
    sections = []
    for module in sorted(by_module):
        notebook = re.match(r"nb(\d+)_(.*)", module)
        heading = f"Notebook {notebook.group(1)}: {notebook.group(2).replace('_', ' ')}" if notebook else module
        parts = [f'<h2 id="{html.escape(module)}">{html.escape(heading)}</h2>']
        for name in by_module[module]:
            checker, solution = checkers.get(name), solutions.SOLUTIONS.get(name)
            doc = inspect.getdoc(checker) if checker else None
            source = (highlight(inspect.getsource(solution), PythonLexer(), formatter) if solution
                      else '<p class="missing">No reference solution yet.</p>')
            parts.append(f'<div class="exercise" id="{html.escape(name)}">\n<h3><code>exercises.{html.escape(name)}'
                         f'</code></h3>\n<pre class="doc">{html.escape(doc or "(no docstring)")}</pre>\n'
                         f'<p>Reference solution (<code>course_utils/exercises/solutions.py</code>):</p>\n{source}'
                         f'</div>')
        sections.append("\n".join(parts))
    body = ('<p><a href="index.html">&larr; all notebooks</a></p>\n<h1>Solutions (for lecturers)</h1>\n'
            '<p class="lead">Each exercise is checked in its notebook by the checker named here; the reference '
            'solution below passes it (tests/test_exercises.py runs every pair). Students\' copies of the site '
            'are built without this page (<code>--no-solutions</code>).</p>\n' + "\n".join(sections))
    return _page("Solutions · Dissecting Attention", body,
                 head=f'<style type="text/css">{formatter.get_style_defs(".highlight")}</style>\n')


# ------------------------------------------------------------------------------------------- build
def mathjax_source() -> Path:
    """The MathJax 2 folder of the installed jupyter-server-mathjax package."""
    try:
        import jupyter_server_mathjax
    except ImportError:
        raise SiteError("the site needs MathJax from the package jupyter-server-mathjax (requirements.txt): "
                        ".venv/bin/pip install -r requirements.txt") from None
    folder = Path(jupyter_server_mathjax.__file__).parent / "static"
    if not (folder / "MathJax.js").is_file():
        raise SiteError(f"{folder}/MathJax.js not found: reinstall jupyter-server-mathjax")
    return folder


def copy_static(output: Path) -> None:
    """MathJax (its needed parts) and the vendored reveal.js into output/_static/."""
    static = output / STATIC
    mathjax = mathjax_source()
    for part in MATHJAX_PARTS:
        source, target = mathjax / part, static / "mathjax" / part
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, target, dirs_exist_ok=True)
        else:
            shutil.copy2(source, target)
    shutil.copytree(VENDORED / "reveal.js", static / "reveal.js", dirs_exist_ok=True)


@dataclass
class SiteReport:
    """What build_site wrote."""

    output: Path
    pages: list[Path]
    seconds: float

    def __str__(self) -> str:
        return (f"site written to {self.output}: {len(self.pages)} pages in {self.seconds:.1f} s; "
                f"open {self.output / 'index.html'}")


_EXPORTERS: list = []  # per process: the exporters, made on first use


def export_notebook(path: Path, output: Path, slides: bool, solutions: bool) -> tuple[NotebookEntry, list[Path]]:
    """Write one notebook's page (and slides) into `output`; returns its index entry and the files written."""
    import nbformat

    if not _EXPORTERS:
        _EXPORTERS.extend(_exporters())
    page_exporter, slides_exporter = _EXPORTERS
    notebook = nbformat.read(path, as_version=4)
    entry = describe(notebook, path.stem)
    notebook = nbformat.from_dict(prepare(notebook))
    resources = {"metadata": {"name": entry.title, "path": str(path.parent)},
                 "course": {"mathjax_head": _mathjax_head(""), "slides": entry.slides, "reveal": f"{STATIC}/reveal.js",
                            "solutions_link": ' <a href="solutions.html">solutions</a>' if solutions else ""}}
    written = []
    for exporter, name in [(page_exporter, entry.page)] + ([(slides_exporter, entry.slides)] if slides else []):
        body, _ = exporter.from_notebook_node(notebook, resources=copy.deepcopy(resources))
        (output / name).write_text(body, encoding="utf-8")
        written.append(output / name)
    return entry, written


def default_jobs() -> int:
    """Processes for the export: two where there are two cores (the course machines have two)."""
    return max(1, min(2, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1))


def build_site(output: Path | str, notebooks: list[Path] | None = None, solutions: bool = True,
               slides: bool = True, jobs: int | None = None) -> SiteReport:
    """Build the static site into `output` (created; files of an earlier build are overwritten) from
    `notebooks` (default: every notebooks/*.ipynb, in name order), exporting `jobs` notebooks at a time (default:
    default_jobs()). Raises SiteError if a notebook is missing or a page would load anything from the network."""
    start = time.perf_counter()
    output = Path(output)
    paths = sorted(NOTEBOOKS.glob("*.ipynb")) if notebooks is None else [Path(path) for path in notebooks]
    if not paths:
        raise SiteError(f"no notebooks to build a site from (looked in {NOTEBOOKS})")
    missing = [str(path) for path in paths if not path.is_file()]
    if missing:
        raise SiteError(f"notebook(s) not found: {', '.join(missing)}")
    output.mkdir(parents=True, exist_ok=True)
    copy_static(output)
    jobs = min(jobs or default_jobs(), len(paths))
    arguments = [(path, output, slides, solutions) for path in paths]
    if jobs > 1 and "fork" in multiprocessing.get_all_start_methods():
        import nbconvert  # noqa: F401  (imported once, before the fork, not in every worker)

        context = multiprocessing.get_context("fork")
        largest_first = sorted(arguments, key=lambda args: -args[0].stat().st_size)
        with ProcessPoolExecutor(jobs, mp_context=context) as pool:
            done = dict(zip(largest_first, pool.map(export_notebook, *zip(*largest_first))))
        results = [done[args] for args in arguments]
    else:
        results = [export_notebook(*args) for args in arguments]
    entries = [entry for entry, _ in results]
    written = [path for _, files in results for path in files]
    (output / "index.html").write_text(index_page(entries, solutions), encoding="utf-8")
    written.append(output / "index.html")
    if solutions:
        (output / "solutions.html").write_text(solutions_page(), encoding="utf-8")
        written.append(output / "solutions.html")
    elif (output / "solutions.html").exists():
        (output / "solutions.html").unlink()  # a students' build over a lecturer's one
    check_offline(output)
    return SiteReport(output, written, time.perf_counter() - start)


# ------------------------------------------------------------------------------------------- command line
def cmd_site(args: argparse.Namespace) -> int:
    """`python -m course_utils site --output DIR`: build the site, print where it is."""
    try:
        report = build_site(args.output, notebooks=args.notebooks or None, solutions=not args.no_solutions,
                            slides=not args.no_slides, jobs=args.jobs)
    except SiteError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(report)
    return 0


def add_site_parser(commands: argparse._SubParsersAction) -> None:
    """`site --output DIR [--notebooks NB ...] [--no-solutions] [--no-slides] [--jobs N]`."""
    site = commands.add_parser("site", help="a static offline site of the executed notebooks, slides and solutions",
                               description="Build the course's static site: index, one page and one reveal.js "
                                           "deck per notebook, and the lecturers' solutions page; it reads with "
                                           "no network (MathJax and reveal.js are copied in).")
    site.add_argument("--output", "-o", required=True, type=Path, help="folder to write the site into")
    site.add_argument("--notebooks", nargs="+", type=Path, default=None,
                      help="notebooks to include (default: every notebooks/*.ipynb)")
    site.add_argument("--no-solutions", action="store_true", help="leave out the solutions page (students' copy)")
    site.add_argument("--no-slides", action="store_true", help="leave out the slides (faster)")
    site.add_argument("--jobs", "-j", type=int, default=None, help="notebooks exported at a time (default: 2, or 1 "
                                                                    "on a one-core machine)")
    site.set_defaults(func=cmd_site)


def main(argv: list[str] | None = None) -> int:
    """`python -m course_utils.site --output DIR`, the same as the `site` command."""
    parser = argparse.ArgumentParser(prog="python -m course_utils")
    add_site_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["site", *(sys.argv[1:] if argv is None else argv)])
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
