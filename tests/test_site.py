"""The static site (tools.site): built from one real notebook into a temp folder, every page present, nothing
loaded from the network, every reference solution on the solutions page. The browser half is
tests/browser/run_site_check.py."""
from __future__ import annotations

import html
import json
from pathlib import Path

import pytest

from course_utils.exercises.solutions import SOLUTIONS
from tools import site
from tools.site import export, offline, pages

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
    assert len([page for page in pages if not page.name.startswith("session-")]) == 4
    for page in pages:
        text = page.read_text(encoding="utf-8")
        assert offline._remote_resources(text) == [], page.name
        assert "cdnjs" not in text and "unpkg" not in text, page.name
    offline.check_offline(built)  # what build_site ran: no exception


def test_pages_use_the_local_mathjax_and_reveal(built):
    page = (built / "03_attention_decoder.html").read_text(encoding="utf-8")
    slides = (built / "03_attention_decoder.slides.html").read_text(encoding="utf-8")
    for text in (page, slides):
        assert f'src="_static/mathjax/MathJax.js?config={pages._MATHJAX_CONFIG}"' in text
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
    entry = pages.describe(json.loads(NOTEBOOK.read_text(encoding="utf-8")), NOTEBOOK.stem)
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


def test_question_answers_are_on_the_solutions_page_and_folded_on_the_notebook_page(built):
    from course_utils.exercises.questions import QUESTIONS
    from tools.site.pages import inline_markdown

    solutions = (built / "solutions.html").read_text(encoding="utf-8")
    notebook_page = (built / "03_attention_decoder.html").read_text(encoding="utf-8")
    assert 'id="questions-03"' in solutions and 'id="questions-03"' in notebook_page
    assert notebook_page.count('<details class="course-answer">') == len(QUESTIONS["03"])
    for question in QUESTIONS["03"]:
        assert inline_markdown(question.prompt) in solutions and inline_markdown(question.answer) in solutions
        prose = max((part.strip() for part in question.answer.split("`")[::2]), key=len)  # outside code spans
        assert len(prose) > 40 and html.escape(prose) in solutions
        # on the notebook's page: under its prompt, inside a closed <details> (no `open` attribute)
        page = html.unescape(notebook_page)  # nbconvert writes quotes as they are
        prompt_at = page.index(html.unescape(inline_markdown(question.prompt)))
        answer_at = page.index(prose)
        folded_at = page.rindex('<details class="course-answer"><summary>Answer</summary>', 0, answer_at)
        assert prompt_at < folded_at < answer_at < page.index("</details>", answer_at)


def test_every_stored_notebook_has_a_title_and_summary_for_the_index():
    notebooks = sorted(site.NOTEBOOKS.glob("*.ipynb"))
    assert len(notebooks) >= 6
    for path in notebooks:
        entry = pages.describe(json.loads(path.read_text(encoding="utf-8")), path.stem)
        assert entry.title != path.stem and entry.title[:2] == path.stem[:2], path.name
        assert len(entry.summary_markdown) > 80, path.name


def test_prepare_replaces_widgets_and_sets_slides_without_touching_the_original():
    notebook = {"cells": [{"cell_type": "markdown", "metadata": {}, "source": "# Title"},
                          {"cell_type": "code", "metadata": {}, "execution_count": 1, "source": "w",
                           "outputs": [{"output_type": "execute_result", "execution_count": 1, "metadata": {},
                                        "data": {export._WIDGET_MIME: {"model_id": "abc"}, "text/plain": "VBox()"}}]}],
                "metadata": {"widgets": {"state": {}}}, "nbformat": 4, "nbformat_minor": 5}
    original = json.dumps(notebook, sort_keys=True)
    prepared = export._prepare(notebook)
    assert json.dumps(notebook, sort_keys=True) == original
    assert "widgets" not in prepared["metadata"]
    assert prepared["cells"][1]["outputs"][0]["data"] == {"text/html": export._WIDGET_NOTE}
    assert prepared["cells"][0]["metadata"]["slideshow"] == {"slide_type": "slide"}


def test_describe_takes_the_title_first_paragraph_and_the_header_lines():
    notebook = {"cells": [{"cell_type": "markdown", "source": "# 09 · Title here\n\nWhat it teaches.\n\n"
                                                             "**You will learn**\n\n- a\n\n**Builds on:** 08.\n\n"
                                                             "**Time:** 20 min.\n\n## 1. First section"}]}
    entry = pages.describe(notebook, "09_x")
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
    assert offline._remote_resources(page) == expected


def test_the_build_fails_when_a_page_would_load_from_the_network(tmp_path):
    notebook = tiny_notebook(tmp_path / "01_remote.ipynb", "# 01 · Remote\n\nA picture: ![x](https://example.org/a.png)")
    with pytest.raises(offline.SiteError, match=r"01_remote.html: https://example.org/a.png"):
        site.build_site(tmp_path / "out", notebooks=[notebook], solutions=False)


def test_students_build_has_no_solutions_and_widget_outputs_become_a_note(tmp_path):
    widget = {"output_type": "execute_result", "execution_count": 1, "metadata": {},
              "data": {export._WIDGET_MIME: {"model_id": "m", "version_major": 2, "version_minor": 0},
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
    with pytest.raises(offline.SiteError, match="not found"):
        site.build_site(tmp_path / "out", notebooks=[tmp_path / "nope.ipynb"])


def test_site_command_parser_and_exit_status(tmp_path, capsys):
    argv = ["--output", str(tmp_path / "out"), "--no-solutions", "--no-slides", "--notebooks",
            str(tmp_path / "nope.ipynb")]
    args = site.build_parser().parse_args(argv)
    assert args.output == tmp_path / "out" and args.no_solutions and args.no_slides
    assert site.main(argv) == 1
    assert "error: notebook(s) not found" in capsys.readouterr().err


# ------------------------------------------------------------------------------------------- the learner's page
COLAB = ("# NBVAL_IGNORE_OUTPUT\n# Setup on Google Colab only\nimport sys\n\nif \"google.colab\" in sys.modules:\n"
         "    print('colab')")


def learner_notebook(path: Path) -> Path:
    cells = [{"cell_type": "markdown", "id": "t", "metadata": {}, "source": "# 01 · Learner\n\nWhat it teaches."},
             {"cell_type": "code", "id": "colab", "metadata": {}, "execution_count": 1, "outputs": [],
              "source": COLAB},
             {"cell_type": "markdown", "id": "m", "metadata": {}, "source":
              "## 1. A claim\n\nPinned down by `tests/test_data.py::test_one` and by a test that wraps:\n"
              "`tests/test_decoder.py::\ntest_two`. Whole file (`tests/test_encoder.py`); again "
              "`tests/test_data.py::test_one`.\n\n```\npytest tests/test_keep.py\n```"},
             {"cell_type": "code", "id": "c", "metadata": {}, "execution_count": 2, "source":
              "# NBVAL_CHECK_OUTPUT\nvalue = 41 + 1  # the answer\nprint(value)",
              "outputs": [{"output_type": "stream", "name": "stdout", "text": "42\n"}]},
             {"cell_type": "code", "id": "q", "metadata": {}, "execution_count": 3,
              "source": 'exercises.show_questions("03")', "outputs": []}]
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    return path


def test_learner_view_strips_markers_folds_colab_footnotes_tests_and_folds_answers():
    from course_utils.exercises.questions import QUESTIONS
    from tools.site import learner

    notebook = {"cells": _learner_cells(), "metadata": {}}
    before = json.dumps(notebook, sort_keys=True)
    view = learner.learner_view(notebook)
    assert json.dumps(notebook, sort_keys=True) == before  # the input is untouched
    colab, prose, code, questions, notes = view["cells"][1:]
    assert colab["cell_type"] == "markdown" and colab["source"].startswith('<details class="course-colab">')
    assert "NBVAL" not in colab["source"] and '"google.colab" in sys.modules' in colab["source"]
    assert colab["metadata"]["slideshow"] == {"slide_type": "skip", "manual": True}
    assert code["source"] == "value = 41 + 1  # the answer\nprint(value)"
    assert "`tests/" not in prose["source"] and "pytest tests/test_keep.py" in prose["source"]  # fenced: kept
    assert prose["source"].count('href="#course-test-1"') == 2 and 'href="#course-test-3"' in prose["source"]
    assert "(<sup" not in prose["source"]  # a parenthesis holding only the path goes with it
    assert [line for line in notes["source"].splitlines() if line.startswith("<li")] == [
        '<li id="course-test-1"><code>tests/test_data.py::test_one</code></li>',
        '<li id="course-test-2"><code>tests/test_decoder.py::test_two</code></li>',
        '<li id="course-test-3"><code>tests/test_encoder.py</code></li>']
    page = questions["outputs"][0]["data"]["text/html"]
    assert page.count('<details class="course-answer"><summary>Answer</summary>') == len(QUESTIONS["03"])
    assert "<details open" not in page


def _learner_cells() -> list[dict]:
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        return json.loads(learner_notebook(Path(folder) / "01_learner.ipynb").read_text())["cells"]


def test_learner_page_as_built(tmp_path):
    notebook = learner_notebook(tmp_path / "01_learner.ipynb")
    site.build_site(tmp_path / "out", notebooks=[notebook], solutions=False, slides=False)
    page = (tmp_path / "out" / "01_learner.html").read_text(encoding="utf-8")
    assert "NBVAL_" not in page
    assert '<details class="course-colab">' in page and "<details open" not in page
    assert page.index('<details class="course-colab">') < page.index("A claim")  # folded where it was
    notes = page.index('<div class="course-test-notes">')
    assert notes > page.rindex('href="#course-test-')  # the footnotes come last
    assert 'id="course-test-2"><code>tests/test_decoder.py::test_two</code>' in page
    assert page.count('<details class="course-answer">') >= 1


# ------------------------------------------------------------------------------------------- session decks
def deck_cells() -> list[dict]:
    long_text = "## 1. Scores\n\nThe score compares the query with every key. It is a dot product here.\n\n" \
                "$$e_j = q^\\top k_j$$\n\n" + "\n".join(f"More prose, line {i}." for i in range(20))
    figure = {"output_type": "display_data", "metadata": {}, "data": {"image/png": "iVBORw0KGgo=", "text/plain": "F"}}
    return [{"cell_type": "markdown", "metadata": {}, "source": "# 01 · Deck\n\nIntro."},
            {"cell_type": "markdown", "metadata": {"tags": ["lecture"]}, "source": long_text},
            {"cell_type": "markdown", "metadata": {"tags": ["notes"]}, "source": "Say this aloud."},
            {"cell_type": "code", "metadata": {"tags": ["lecture", "optional"]}, "execution_count": 1,
             "source": "# NBVAL_IGNORE_OUTPUT\nplt.plot(x)\nplt.show()", "outputs": [figure]},
            {"cell_type": "code", "metadata": {"tags": ["lecture"]}, "execution_count": 2,
             "source": "\n".join(f"x{i} = {i}" for i in range(20)),
             "outputs": [{"output_type": "stream", "name": "stdout", "text": "\n".join(map(str, range(20)))}]}]


def test_condense_markdown_keeps_heading_first_sentence_and_equations():
    from tools.site.decks import _condense_markdown

    slide, notes = _condense_markdown(deck_cells()[1]["source"])
    assert slide == "## 1. Scores\n\nThe score compares the query with every key.\n\n$$e_j = q^\\top k_j$$"
    assert notes.startswith("It is a dot product here.") and "line 19" in notes
    slide, notes = _condense_markdown("End of the last section.\n\n## 2. Next\n\nFirst. Second.")
    assert slide == "## 2. Next\n\nFirst." and notes == "End of the last section.\n\nSecond."


def test_session_deck_from_tagged_cells(tmp_path):
    from tools.site import decks

    notebooks = {"01_deck": {"cells": deck_cells(), "metadata": {}},
                 "05_untagged": {"cells": [{"cell_type": "markdown", "metadata": {}, "source": "# 05"}]}}
    deck = decks.session_notebook(1, notebooks)
    assert decks.session_notebook(2, notebooks) is None  # no tagged cell in session 2's notebooks
    types = [(cell["cell_type"], cell["metadata"]["slideshow"]["slide_type"]) for cell in deck["cells"]]
    assert types == [("markdown", "slide"), ("markdown", "slide"), ("markdown", "slide"), ("markdown", "notes"),
                     ("markdown", "slide"), ("code", "-"), ("markdown", "notes"), ("markdown", "slide"),
                     ("code", "-"), ("markdown", "notes")]
    assert decks.slide_count(deck) == 5
    notes = deck["cells"][3]["source"]
    assert "line 19" in notes and notes.endswith("Say this aloud.")
    figure_heading, figure = deck["cells"][4], deck["cells"][5]
    assert "optional" in figure_heading["source"] and "### 1. Scores" in figure_heading["source"]
    assert figure["metadata"]["transient"] == {"remove_source": True} and "NBVAL" not in figure["source"]
    code = deck["cells"][8]
    assert len(code["source"].splitlines()) == decks._CODE_LINES + 1
    assert len(code["outputs"][0]["text"].splitlines()) == decks._OUTPUT_LINES + 1
    assert "x19 = 19" in deck["cells"][9]["source"]


def test_session_deck_over_the_slide_limit_fails(monkeypatch):
    from tools.site import decks

    monkeypatch.setattr(decks, "_MAX_SLIDES", 3)
    with pytest.raises(offline.SiteError, match=r"session-1.slides.html would have 5 slides \(at most 3\)"):
        decks.session_notebook(1, {"01_deck": {"cells": deck_cells(), "metadata": {}}})


def test_build_writes_the_session_deck_with_notes_and_lists_it(tmp_path):
    path = tmp_path / "01_deck.ipynb"
    cells = [{**cell, "id": f"c{i}", **({"outputs": cell["outputs"]} if cell["cell_type"] == "code" else {})}
             for i, cell in enumerate(deck_cells())]
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    site.build_site(tmp_path / "out", notebooks=[path], solutions=False)
    deck = (tmp_path / "out" / "session-1.slides.html").read_text(encoding="utf-8")
    assert not (tmp_path / "out" / "session-2.slides.html").exists()
    assert "width: 1280" in deck and "height: 720" in deck and "RevealNotes" in deck
    assert deck.count('<aside class="notes">') == 3 and "Say this aloud." in deck
    assert 'href="session-1.slides.html"' in (tmp_path / "out" / "index.html").read_text(encoding="utf-8")


# ------------------------------------------------------------------------------------------- tooling, not package
REPO = Path(__file__).resolve().parent.parent


def test_the_site_command_runs_from_the_repository_root(tmp_path):
    import os
    import subprocess
    import sys

    notebook = tiny_notebook(tmp_path / "01_tiny.ipynb", "# 01 · Tiny\n\nOne paragraph of what it teaches.")
    environment = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    result = subprocess.run([sys.executable, "-m", "tools.site", "--output", str(tmp_path / "out"), "--notebooks",
                             str(notebook), "--no-solutions", "--no-slides"], cwd=REPO, env=environment,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "site written to" in result.stdout and (tmp_path / "out" / "01_tiny.html").is_file()


def test_pip_installs_course_utils_only_and_nothing_in_it_imports_the_tools():
    import ast
    import tomllib

    from setuptools import find_packages

    setuptools_config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert "package-data" not in setuptools_config  # no vendored JavaScript in a learner's install
    packages = find_packages(str(REPO), **setuptools_config["packages"]["find"])
    assert "course_utils" in packages and "course_utils.exercises" in packages and "course_utils.cli" in packages
    assert all(package.split(".")[0] == "course_utils" for package in packages), packages
    for path in (REPO / "course_utils").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [alias.name for alias in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else []
            assert not any(name.split(".")[0] == "tools" for name in names), path
