"""One notebook exported as the site's page and reveal.js slides (nbconvert, with the course's templates).

`export_notebook` writes `NN_name.html` (HTMLExporter, JupyterLab look) and `NN_name.slides.html` (SlidesExporter)
from the learner's view of the notebook, with slide types set and each widget output replaced by a note (a static
page has no kernel); `export_session_deck` writes an assembled session deck. Both point at the MathJax and
reveal.js copied into `_static/`. Not about the index or solutions pages (pages) nor the offline check (offline).
"""
from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from tools.site.offline import STATIC
from tools.site.pages import NotebookEntry, describe, mathjax_head

__all__ = ["export_notebook", "export_session_deck"]

_WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
_WIDGET_NOTE = ('<p class="course-widget-note"><em>An interactive widget was here: it needs a running kernel. Open '
                'the notebook in JupyterLab to use it; the static pictures on this page show what it draws.</em></p>')


def _prepare(notebook: dict[str, Any]) -> dict[str, Any]:
    """A copy of the notebook ready to export: the learner's view with slide types set, widget state dropped and
    each widget output replaced by a note; the input is untouched."""
    from tools.site.learner import learner_view
    from tools.site.slides import add_slide_metadata

    notebook = add_slide_metadata(learner_view(notebook))
    notebook.get("metadata", {}).pop("widgets", None)
    for cell in notebook.get("cells", []):
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if _WIDGET_MIME in data:
                output["data"] = {"text/html": _WIDGET_NOTE}
    return notebook


# ------------------------------------------------------------------------------------------- templates
_NAV_CSS = """
<style type="text/css">
nav.course-nav { font-family: var(--jp-ui-font-family, sans-serif); font-size: 14px; padding: 8px 16px;
  border-bottom: 1px solid #ddd; background: #f7f7f7; }
nav.course-nav a { margin-right: 1.2em; }
.course-widget-note { color: #555; }
</style>
"""
_LEARNER_CSS = """
<style type="text/css">
details.course-colab, details.course-answer { margin: 0.4em 0; padding: 0.3em 0.8em; border: 1px solid #ddd;
  border-radius: 4px; background: #fafafa; }
details.course-colab > summary, details.course-answer > summary { cursor: pointer; color: #4a7ab5; }
.course-test-notes { margin-top: 2em; border-top: 1px solid #ddd; font-size: 0.9em; color: #444; }
sup.course-test-ref a { text-decoration: none; }
</style>
"""

_LAB_TEMPLATE = """{%- extends 'index.html.j2' -%}
{%- block html_head_js -%}{%- endblock html_head_js -%}
{%- block html_head_js_mermaidjs -%}{%- endblock html_head_js_mermaidjs -%}
{%- block html_head_js_mathjax -%}{{ resources.course.mathjax_head }}{%- endblock html_head_js_mathjax -%}
{%- block extra_css -%}""" + _NAV_CSS + _LEARNER_CSS + """{%- endblock extra_css -%}
{%- block body_header -%}
{{ super() }}
<nav class="course-nav"><a href="index.html">&larr; all notebooks</a>
<a href="{{ resources.course.slides }}">slides</a>{{ resources.course.solutions_link }}</nav>
{%- endblock body_header -%}
"""

_REVEAL_TEMPLATE = """{%- extends 'index.html.j2' -%}
{%- block html_head_js -%}{%- endblock html_head_js -%}
{%- block html_head_js_mathjax -%}{{ resources.course.mathjax_head }}{%- endblock html_head_js_mathjax -%}
{%- block html_head_css -%}""" + _LEARNER_CSS + """{{ resources.course.deck_css | default('', true) }}
{%- endblock html_head_css -%}
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
    """The page, slides and session-deck exporters (made once per build: loading a template takes a while)."""
    from jinja2 import DictLoader
    from nbconvert import HTMLExporter, SlidesExporter

    loader = DictLoader({"course_lab.html.j2": _LAB_TEMPLATE, "course_reveal.html.j2": _REVEAL_TEMPLATE})
    # The notebooks are the course's own: nbconvert's bleach pass over every cell (`clean_html`, a third of the
    # build time) is skipped; check_offline still rejects any remote resource an output would load.
    trusted = {"clean_html": _trusted_html}
    page = HTMLExporter(template_name="lab", extra_loaders=[loader], template_file="course_lab.html.j2",
                        filters=trusted)
    slides = SlidesExporter(template_name="reveal", extra_loaders=[loader], template_file="course_reveal.html.j2",
                            reveal_theme="white", reveal_url_prefix=f"{STATIC}/reveal.js", filters=trusted)
    session = SlidesExporter(template_name="reveal", extra_loaders=[loader], template_file="course_reveal.html.j2",
                             reveal_theme="white", reveal_url_prefix=f"{STATIC}/reveal.js", filters=trusted,
                             reveal_width="1280", reveal_height="720", exclude_input_prompt=True,
                             exclude_output_prompt=True)
    return page, slides, session


# ------------------------------------------------------------------------------------------- export
_EXPORTERS: list = []  # per process: the exporters, made on first use


def export_notebook(path: Path, output: Path, slides: bool, solutions: bool) -> tuple[NotebookEntry, list[Path]]:
    """Write one notebook's page (and slides) into `output`; returns its index entry and the files written."""
    import nbformat

    if not _EXPORTERS:
        _EXPORTERS.extend(_exporters())
    page_exporter, slides_exporter, _ = _EXPORTERS
    notebook = nbformat.read(path, as_version=4)
    entry = describe(notebook, path.stem)
    notebook = nbformat.from_dict(_prepare(notebook))
    resources = {"metadata": {"name": entry.title, "path": str(path.parent)},
                 "course": {"mathjax_head": mathjax_head(""), "slides": entry.slides, "reveal": f"{STATIC}/reveal.js",
                            "solutions_link": ' <a href="solutions.html">solutions</a>' if solutions else ""}}
    written = []
    for exporter, name in [(page_exporter, entry.page)] + ([(slides_exporter, entry.slides)] if slides else []):
        body, _ = exporter.from_notebook_node(notebook, resources=copy.deepcopy(resources))
        (output / name).write_text(body, encoding="utf-8")
        written.append(output / name)
    return entry, written


def export_session_deck(deck: dict[str, Any], output: Path, name: str, title: str) -> Path:
    """Write an assembled session deck (tools.site.decks.session_notebook) as `output/name`, a 1280x720
    reveal.js deck with no prompts; returns the path written."""
    import nbformat

    from tools.site.decks import DECK_CSS

    if not _EXPORTERS:
        _EXPORTERS.extend(_exporters())
    resources = {"metadata": {"name": title, "path": str(output)},
                 "course": {"mathjax_head": mathjax_head(""), "reveal": f"{STATIC}/reveal.js", "deck_css": DECK_CSS}}
    body, _ = _EXPORTERS[2].from_notebook_node(nbformat.from_dict(deck), resources=resources)
    (output / name).write_text(body, encoding="utf-8")
    return output / name
