"""The learner's view of a notebook on the site: what the page shows differs from the stored notebook in four ways.

`learner_view(notebook)` returns a copy in which
  1. code cells lose their `# NBVAL_...` marker lines (`strip_markers`);
  2. the Colab setup cell becomes a closed <details> element, so the page starts with the notebook's prose;
  3. test-file paths named in the prose (`tests/test_x.py::name`) become numbered footnotes at the bottom;
  4. the questions cell (`exercises.show_questions("NN")`) shows each question with its answer folded under it.
The stored notebooks are never changed. Not about slide types (slides) nor the session decks (decks).
"""
from __future__ import annotations

import copy
import re
from typing import Any

__all__ = ["learner_view", "strip_markers"]

_NBVAL_LINE = re.compile(r"^[ \t]*# NBVAL_\w+[ \t]*(\n|$)", flags=re.MULTILINE)
_COLAB_MARK = "google.colab"
# a test path as a whole code span, or bare in the prose; "::name" may wrap onto the next line
_PATH = r"tests/[\w/.-]+?\.py(?:::\s*[\w\[\]-]+)?"
_TEST_PATH = re.compile(rf"\(\s*`(?P<p1>{_PATH})`\s*\)|`(?P<p2>{_PATH})`|(?<![`\w/])(?P<p3>{_PATH})(?![`\w])")
_FENCE = re.compile(r"^(```|~~~).*?^\1[^\n]*$", flags=re.DOTALL | re.MULTILINE)


def _source(cell: dict[str, Any]) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


def strip_markers(source: str) -> str:
    """A code cell's source without its `# NBVAL_...` lines."""
    return _NBVAL_LINE.sub("", source)


def _fold_colab_cell(notebook: dict[str, Any]) -> None:
    """Replace (in place) the first code cell that mentions "google.colab" by a markdown cell holding a closed
    <details> with that code (left out of the slides)."""
    for index, cell in enumerate(notebook.get("cells", [])):
        if cell.get("cell_type") == "code" and _COLAB_MARK in _source(cell):
            code = strip_markers(_source(cell)).strip("\n")
            text = ('<details class="course-colab">\n<summary>Setup cell for Google Colab (it does nothing '
                    f'anywhere else): show the code</summary>\n\n```python\n{code}\n```\n\n</details>')
            metadata = {key: value for key, value in cell.get("metadata", {}).items() if key != "execution"}
            metadata["slideshow"] = {"slide_type": "skip", "manual": True}  # set-up: not a slide
            notebook["cells"][index] = {"cell_type": "markdown", "id": cell.get("id", "colab-setup"),
                                        "metadata": metadata, "source": text}
            return


def _footnote_test_paths(notebook: dict[str, Any]) -> list[str]:
    """Replace (in place) every test path in the markdown cells by a numbered footnote mark and append a
    markdown cell listing them; returns the paths in footnote order. Fenced code is left alone."""
    paths: list[str] = []

    def mark(match: re.Match) -> str:
        path = re.sub(r"::\s+", "::", match.group("p1") or match.group("p2") or match.group("p3"))
        if path not in paths:
            paths.append(path)
        number = paths.index(path) + 1
        return (f'<sup class="course-test-ref"><a href="#course-test-{number}" title="{path}">'
                f'[{number}]</a></sup>')

    for cell in notebook.get("cells", []):
        if cell.get("cell_type") != "markdown":
            continue
        text, parts, last = _source(cell), [], 0
        for fence in _FENCE.finditer(text):
            parts += [_TEST_PATH.sub(mark, text[last:fence.start()]), fence.group(0)]
            last = fence.end()
        cell["source"] = "".join(parts) + _TEST_PATH.sub(mark, text[last:])
    if paths:
        items = "\n".join(f'<li id="course-test-{number}"><code>{path}</code></li>'
                          for number, path in enumerate(paths, 1))
        notebook.setdefault("cells", []).append(
            {"cell_type": "markdown", "id": "course-test-notes", "metadata": {},
             "source": f'<div class="course-test-notes">\n<p><strong>Tests named on this page</strong> (run them '
                       f'with <code>python -m pytest PATH</code>):</p>\n<ol>\n{items}\n</ol>\n</div>'})
    return paths


def _show_answers(notebook: dict[str, Any]) -> None:
    """Replace (in place) the output of the `exercises.show_questions("NN")` cell by the questions with each
    answer folded under it."""
    from tools.site.pages import questions_with_answers

    for cell in notebook.get("cells", []):
        match = re.search(r"show_questions\(\s*[\"']?(\d+)", _source(cell)) if cell.get("cell_type") == "code" \
            else None
        if match:
            page = questions_with_answers(f"{int(match.group(1)):02d}")
            if page:
                cell["outputs"] = [{"output_type": "display_data", "metadata": {}, "data": {"text/html": page}}]


def learner_view(notebook: dict[str, Any]) -> dict[str, Any]:
    """A copy of `notebook` as the learner's page shows it (the module's four changes); the input is untouched."""
    result = copy.deepcopy(notebook)
    _fold_colab_cell(result)
    for cell in result.get("cells", []):
        if cell.get("cell_type") == "code":
            cell["source"] = strip_markers(_source(cell))
    _footnote_test_paths(result)
    _show_answers(result)
    return result
