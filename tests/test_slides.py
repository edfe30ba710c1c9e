"""Slideshow metadata (course_utils.site.slides): the rules, idempotence, metadata-only changes, and the stored
notebooks."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from course_utils.site import slides

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"


def md(source: str) -> dict:
    return {"cell_type": "markdown", "metadata": {}, "source": source}


def code(source: str = "x = 1", tags: list[str] | None = None) -> dict:
    return {"cell_type": "code", "metadata": {"tags": tags} if tags else {}, "execution_count": 1, "outputs": [],
            "source": source}


LONG = "\n".join(f"line {i} of a long explanation" for i in range(slides.NOTES_LINES + 1))

CELLS = [  # (cell, expected slide type)
    (md("# 01 · Title\n\n" + LONG), "slide"),
    (code("print('colab set-up')"), "skip"),
    (code("FAST = True", tags=["parameters"]), "skip"),
    (md("## 1. A section\n\nIntro."), "slide"),
    (code(), "fragment"),
    (md("What the output shows."), "subslide"),
    (md("And one more remark."), "fragment"),
    (code(), "fragment"),
    (code(), "subslide"),
    (md("### A step"), "subslide"),
    (md(LONG), "notes"),
    (code(), "subslide"),
    (md("The end of section 1.\n\n## 2. The next section"), "slide"),
    (md("```python\n# a comment, not a heading\nx = 1\n```"), "fragment"),
    (code("FAST = False", tags=["parameters"]), "skip"),
    (md("**1. An exercise.** Write it."), "subslide"),
    (code(), "fragment"),
]


def notebook(cells: list[dict]) -> dict:
    return {"cells": cells, "metadata": {"kernelspec": {"name": "python3"}}, "nbformat": 4, "nbformat_minor": 5}


def test_rules():
    result = slides.add_slide_metadata(notebook([cell for cell, _ in CELLS]))
    got = [cell["metadata"]["slideshow"]["slide_type"] for cell in result["cells"]]
    assert got == [expected for _, expected in CELLS]


def test_only_the_slideshow_metadata_changes_and_the_input_is_not_modified():
    original = notebook([cell for cell, _ in CELLS])
    before = json.dumps(original, sort_keys=True)
    result = slides.add_slide_metadata(original)
    assert json.dumps(original, sort_keys=True) == before
    for cell in result["cells"]:
        del cell["metadata"]["slideshow"]
    assert json.dumps(result, sort_keys=True) == before


def test_idempotent_and_manual_types_are_kept():
    cells = [cell for cell, _ in CELLS]
    cells[4] = {**code(), "metadata": {"slideshow": {"slide_type": "skip", "manual": True}}}
    cells[5] = {**md("text"), "metadata": {"slideshow": {"slide_type": "skip"}}}  # not manual: recomputed
    once = slides.add_slide_metadata(notebook(cells))
    assert slides.add_slide_metadata(once) == once
    assert once["cells"][4]["metadata"]["slideshow"] == {"slide_type": "skip", "manual": True}
    assert once["cells"][5]["metadata"]["slideshow"] == {"slide_type": "subslide"}


def test_heading_level():
    assert slides.heading_level("## 1. Data") == 2
    assert slides.heading_level("text\n\n### step\n\n## section") == 2
    assert slides.heading_level("```\n# comment\n```\nplain") is None
    assert slides.heading_level("#hashtag, not a heading") is None


def test_apply_to_a_copy_of_a_stored_notebook_changes_metadata_only(tmp_path, capsys):
    source = NOTEBOOKS / "03_attention_decoder.ipynb"
    path = tmp_path / source.name
    shutil.copy(source, path)
    original = json.loads(path.read_text(encoding="utf-8"))
    assert slides.main(["--check", str(path)]) in (0, 1)
    assert slides.main([str(path)]) == 0
    assert slides.main(["--check", str(path)]) == 0  # written: now up to date
    assert "up to date" in capsys.readouterr().out
    written = json.loads(path.read_text(encoding="utf-8"))
    assert path.read_text(encoding="utf-8") == slides.notebook_text(written)  # Jupyter's own layout
    for cell in written["cells"]:
        assert cell["metadata"].pop("slideshow")["slide_type"] in slides.SLIDE_TYPES
    for cell in original["cells"]:
        cell["metadata"].pop("slideshow", None)
    assert written == original  # sources, outputs, execution counts and other metadata untouched


def test_stored_notebooks_carry_up_to_date_slide_metadata():
    paths = sorted(NOTEBOOKS.glob("*.ipynb"))
    if not any("slideshow" in cell.get("metadata", {}) for path in paths
               for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]):
        pytest.skip("no notebook has slide metadata yet: run `python -m course_utils.site.slides notebooks/*.ipynb`")
    stale = [path.name for path in paths if slides.apply_to_file(path, check=True)]
    assert not stale, f"run `python -m course_utils.site.slides notebooks/*.ipynb`: stale slide metadata in {stale}"
