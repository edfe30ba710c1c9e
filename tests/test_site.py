"""The static site (course_utils.site): built from one real notebook into a temp folder, every page present, nothing
loaded from the network, every reference solution on the solutions page. The browser half is
tests/browser/run_site_check.py."""
from __future__ import annotations

import argparse
import html
import json
from pathlib import Path

import pytest

from course_utils import site
from course_utils.exercises.solutions import SOLUTIONS

NOTEBOOK = site.NOTEBOOKS / "03_attention_decoder.ipynb"  # the smallest stored notebook with maths and a figure


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    output = tmp_path_factory.mktemp("site")
    report = site.build_site(output, notebooks=[NOTEBOOK])
    assert report.seconds < 60
    return output


def tiny_notebook(path: Path, markdown: str, outputs: list | None = None, metadata: dict | None = None) -> Path:
    notebook = {"cells": [{"cell_type": "markdown", "id": "title", "metadata": {}, "source": markdown},
                          {"cell_type": "code", "id": "code", "metadata": {}, "execution_count": 1,
                           "outputs": outputs or [], "source": "x = 1"}],
                "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
                             **(metadata or {})},
                "nbformat": 4, "nbformat_minor": 5}
    path.write_text(json.dumps(notebook))
    return path


def test_every_page_and_static_file_is_written(built):
    for name in ("index.html", "03_attention_decoder.html", "03_attention_decoder.slides.html", "solutions.html",
                 "_static/mathjax/MathJax.js", "_static/mathjax/config/TeX-AMS-MML_HTMLorMML-full.js",
                 "_static/mathjax/jax/output/HTML-CSS/fonts/STIX-Web/fontdata.js", "_static/reveal.js/dist/reveal.js",
                 "_static/reveal.js/dist/reveal.css", "_static/reveal.js/dist/theme/white.css",
                 "_static/reveal.js/plugin/notes/notes.js", "_static/reveal.js/LICENSE"):
        assert (built / name).is_file(), name
    assert list((built / "_static/mathjax/fonts/HTML-CSS/STIX-Web/woff").glob("*.woff"))


def test_no_page_loads_anything_from_the_network(built):
    pages = sorted(built.glob("*.html"))
    assert len(pages) == 4
    for page in pages:
        text = page.read_text(encoding="utf-8")
        assert site.remote_resources(text) == [], page.name
        assert "cdnjs" not in text and "unpkg" not in text, page.name
    site.check_offline(built)  # what build_site ran: no exception


def test_pages_use_the_local_mathjax_and_reveal(built):
    page = (built / "03_attention_decoder.html").read_text(encoding="utf-8")
    slides = (built / "03_attention_decoder.slides.html").read_text(encoding="utf-8")
    for text in (page, slides):
        assert f'src="_static/mathjax/MathJax.js?config={site.MATHJAX_CONFIG}"' in text
        assert "data:image/png;base64," in text  # the stored figures, embedded
    assert 'src="_static/reveal.js/dist/reveal.js"' in slides
    assert 'href="_static/reveal.js/dist/theme/white.css"' in slides
    assert "Reveal.initialize" in slides and "RevealNotes" in slides
    assert 'href="03_attention_decoder.slides.html"' in page and 'href="index.html"' in page


def test_slides_follow_the_sections(built):
    slides = (built / "03_attention_decoder.slides.html").read_text(encoding="utf-8")
    notebook = json.loads(NOTEBOOK.read_text(encoding="utf-8"))
    sections = sum(1 for cell in notebook["cells"] if cell["cell_type"] == "markdown"
                   and any(line.startswith("## ") for line in "".join(cell["source"]).splitlines()))
    assert sections >= 3
    assert slides.count('class="fragment"') > 0
    assert slides.count("<section") > sections


def test_index_lists_the_notebook_with_title_summary_and_links(built):
    index = (built / "index.html").read_text(encoding="utf-8")
    entry = site.describe(json.loads(NOTEBOOK.read_text(encoding="utf-8")), NOTEBOOK.stem)
    assert entry.title.startswith("03") and entry.title in index
    assert entry.summary_markdown and len(entry.summary_markdown) > 80
    assert 'href="03_attention_decoder.html"' in index and 'href="03_attention_decoder.slides.html"' in index
    assert 'href="solutions.html"' in index


def test_solutions_page_lists_every_checker_with_its_reference_solution(built):
    import inspect

    from course_utils import exercises

    page = (built / "solutions.html").read_text(encoding="utf-8")
    assert SOLUTIONS
    for name, solution in SOLUTIONS.items():
        assert f'id="{name}"' in page, name
        assert f"exercises.{name}" in page
        first_doc_line = inspect.getdoc(getattr(exercises, name)).splitlines()[0]
        assert html.escape(first_doc_line) in page, name
        assert f'<span class="nf">{solution.__name__}</span>' in page, name  # its def line, highlighted


def test_question_answers_are_on_the_solutions_page_and_not_on_the_notebook_page(built):
    from course_utils.exercises.questions import QUESTIONS
    from course_utils.site.pages import inline_markdown

    solutions = (built / "solutions.html").read_text(encoding="utf-8")
    notebook_page = (built / "03_attention_decoder.html").read_text(encoding="utf-8")
    assert 'id="questions-03"' in solutions and 'id="questions-03"' not in notebook_page
    for question in QUESTIONS["03"]:
        assert inline_markdown(question.prompt) in solutions and inline_markdown(question.answer) in solutions
        prose = max((part.strip() for part in question.answer.split("`")[::2]), key=len)  # outside code spans
        assert len(prose) > 40 and html.escape(prose) in solutions
        assert html.escape(prose) not in notebook_page, prose  # the notebook shows the prompts only


def test_every_stored_notebook_has_a_title_and_summary_for_the_index():
    notebooks = sorted(site.NOTEBOOKS.glob("*.ipynb"))
    assert len(notebooks) >= 6
    for path in notebooks:
        entry = site.describe(json.loads(path.read_text(encoding="utf-8")), path.stem)
        assert entry.title != path.stem and entry.title[:2] == path.stem[:2], path.name
        assert len(entry.summary_markdown) > 80, path.name


def test_prepare_replaces_widgets_and_sets_slides_without_touching_the_original():
    notebook = {"cells": [{"cell_type": "markdown", "metadata": {}, "source": "# Title"},
                          {"cell_type": "code", "metadata": {}, "execution_count": 1, "source": "w",
                           "outputs": [{"output_type": "execute_result", "execution_count": 1, "metadata": {},
                                        "data": {site.WIDGET_MIME: {"model_id": "abc"}, "text/plain": "VBox()"}}]}],
                "metadata": {"widgets": {"state": {}}}, "nbformat": 4, "nbformat_minor": 5}
    original = json.dumps(notebook, sort_keys=True)
    prepared = site.prepare(notebook)
    assert json.dumps(notebook, sort_keys=True) == original
    assert "widgets" not in prepared["metadata"]
    assert prepared["cells"][1]["outputs"][0]["data"] == {"text/html": site.WIDGET_NOTE}
    assert prepared["cells"][0]["metadata"]["slideshow"] == {"slide_type": "slide"}


def test_describe_takes_the_title_first_paragraph_and_the_header_lines():
    notebook = {"cells": [{"cell_type": "markdown", "source": "# 09 · Title here\n\nWhat it teaches.\n\n"
                                                             "**You will learn**\n\n- a\n\n**Builds on:** 08.\n\n"
                                                             "**Time:** 20 min.\n\n## 1. First section"}]}
    entry = site.describe(notebook, "09_x")
    assert entry.title == "09 · Title here"
    assert entry.summary_markdown == "What it teaches.\n\n**Builds on:** 08.\n\n**Time:** 20 min."
    assert entry.page == "09_x.html" and entry.slides == "09_x.slides.html"


@pytest.mark.parametrize("page, expected", [
    ('<script src="https://cdn.example.org/x.js"></script>', ["https://cdn.example.org/x.js"]),
    ('<link rel="stylesheet" href="//fonts.example.org/f.css">', ["//fonts.example.org/f.css"]),
    ('<img src="http://example.org/a.png">', ["http://example.org/a.png"]),
    ('<img srcset="a.png 1x, https://example.org/b.png 2x">', ["https://example.org/b.png"]),
    ('<iframe src="https://example.org/"></iframe>', ["https://example.org/"]),
    ("<style>@import url(https://fonts.example.org/css?family=Lato);</style>", ["https://fonts.example.org/css?family=Lato"]),
    ('<style>@import "https://example.org/a.css";</style>', ["https://example.org/a.css"]),
    ('<div style="background: url(\'https://example.org/bg.png\')"></div>', ["https://example.org/bg.png"]),
    ("<script type=\"module\">import mermaid from 'https://cdn.example.org/m.mjs';</script>",
     ["https://cdn.example.org/m.mjs"]),
    ('<script>const m = (await import("https://cdn.example.org/m.mjs")).default;</script>',
     ["https://cdn.example.org/m.mjs"]),
    ('<script>require(["https://unpkg.com/reveal.js@4.0.2/dist/reveal.js"], f);</script>',
     ["https://unpkg.com/reveal.js@4.0.2/dist/reveal.js"]),
    ('<a href="https://tatoeba.org/">a link is read, not loaded</a>', []),
    ('<img src="data:image/png;base64,iVBORw0KGgo=">', []),
    ("<style>.x { background: url(\"data:image/svg+xml,<svg xmlns='http://www.w3.org/2000/svg'/>\"); }</style>", []),
    ('<script src="_static/mathjax/MathJax.js?config=TeX"></script><link href="_static/a.css">', []),
    ("<script>// see https://revealjs.com/config/ for the options\nReveal.initialize({});</script>", []),
])
def test_remote_resources_finds_what_a_browser_would_fetch(page, expected):
    assert site.remote_resources(page) == expected


def test_the_build_fails_when_a_page_would_load_from_the_network(tmp_path):
    notebook = tiny_notebook(tmp_path / "01_remote.ipynb", "# 01 · Remote\n\nA picture: ![x](https://example.org/a.png)")
    with pytest.raises(site.SiteError, match=r"01_remote.html: https://example.org/a.png"):
        site.build_site(tmp_path / "out", notebooks=[notebook], solutions=False)


def test_students_build_has_no_solutions_and_widget_outputs_become_a_note(tmp_path):
    widget = {"output_type": "execute_result", "execution_count": 1, "metadata": {},
              "data": {site.WIDGET_MIME: {"model_id": "m", "version_major": 2, "version_minor": 0},
                       "text/plain": "VBox()"}}
    notebook = tiny_notebook(tmp_path / "01_widget.ipynb", "# 01 · Widget\n\nMaths $x^2$.", outputs=[widget],
                             metadata={"widgets": {"application/vnd.jupyter.widget-state+json": {"state": {}}}})
    output = tmp_path / "out"
    (output / "solutions.html").parent.mkdir()
    (output / "solutions.html").write_text("an older lecturers' build")
    site.build_site(output, notebooks=[notebook], solutions=False, slides=False)
    assert not (output / "solutions.html").exists() and not (output / "01_widget.slides.html").exists()
    assert 'href="solutions.html"' not in (output / "index.html").read_text(encoding="utf-8")
    page = (output / "01_widget.html").read_text(encoding="utf-8")
    assert "course-widget-note" in page and "widget-view" not in page and "unpkg" not in page


def test_missing_notebook_is_an_error(tmp_path):
    with pytest.raises(site.SiteError, match="not found"):
        site.build_site(tmp_path / "out", notebooks=[tmp_path / "nope.ipynb"])


def test_site_command_parser_and_exit_status(tmp_path, capsys):
    parser = argparse.ArgumentParser()
    site.add_site_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["site", "--output", str(tmp_path / "out"), "--no-solutions", "--no-slides",
                              "--notebooks", str(tmp_path / "nope.ipynb")])
    assert args.func is site.cmd_site and args.output == tmp_path / "out" and args.no_solutions and args.no_slides
    assert args.func(args) == 1
    assert "error: notebook(s) not found" in capsys.readouterr().err
