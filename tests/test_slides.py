"""Slideshow metadata (tools.site.slides): the rules, idempotence, metadata-only changes, and the stored
notebooks."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tools.site import slides

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"


def md(source: str) -> dict:
    return {"cell_type": "markdown", "metadata": {}, "source": source}


def code(source: str = "x = 1", tags: list[str] | None = None) -> dict:
    return {"cell_type": "code", "metadata": {"tags": tags} if tags else {}, "execution_count": 1, "outputs": [],
            "source": source}


LONG = "\n".join(f"line {i} of a long explanation" for i in range(slides._NOTES_LINES + 1))

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
    assert slides._heading_level("## 1. Data") == 2
    assert slides._heading_level("text\n\n### step\n\n## section") == 2
    assert slides._heading_level("```\n# comment\n```\nplain") is None
    assert slides._heading_level("#hashtag, not a heading") is None


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
        assert cell["metadata"].pop("slideshow")["slide_type"] in slides._SLIDE_TYPES
    for cell in original["cells"]:
        cell["metadata"].pop("slideshow", None)
    assert written == original  # sources, outputs, execution counts and other metadata untouched


def test_stored_notebooks_carry_up_to_date_slide_metadata():
    paths = sorted(NOTEBOOKS.glob("*.ipynb"))
    if not any("slideshow" in cell.get("metadata", {}) for path in paths
               for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]):
        pytest.skip("no notebook has slide metadata yet: run `python -m tools.site.slides notebooks/*.ipynb`")
    stale = [path.name for path in paths if slides._apply_to_file(path, check=True)]
    assert not stale, f"run `python -m tools.site.slides notebooks/*.ipynb`: stale slide metadata in {stale}"


# ------------------------------------------------------------------------------------------- the lecture plan
from tools.site import lecture_plan  # noqa: E402


def tagged(cells: list[dict]) -> list[list[str]]:
    return [cell["metadata"].get("tags", []) for cell in cells]


@pytest.fixture
def small_plan(monkeypatch):
    monkeypatch.setitem(lecture_plan._PLAN, "01", [lecture_plan._PlanItem("## 1. A section"),
                                                   lecture_plan._PlanItem("plot(x)", optional=True)])


def plan_notebook() -> dict:
    return notebook([md("# 01 · Title"), code("setup", tags=["parameters"]), md("## 1. A section\n\nIntro."),
                     code("plot(x)"), md("See section 1. A section again."), code("y = 2", tags=["lecture"])])


def test_apply_plan_tags_planned_cells_only_keeps_other_tags_and_is_idempotent(small_plan):
    original = plan_notebook()
    before = json.dumps(original, sort_keys=True)
    once = lecture_plan._apply_plan(original, "01_small.ipynb")
    assert json.dumps(original, sort_keys=True) == before  # the input is not modified
    assert tagged(once["cells"]) == [[], ["parameters"], ["lecture"], ["lecture", "optional"], [], []]
    assert lecture_plan._apply_plan(once, "01_small.ipynb") == once
    expected = json.loads(before)
    for cell in once["cells"] + expected["cells"]:  # nothing but the plan's two tags differs
        tags = [tag for tag in cell["metadata"].pop("tags", []) if tag not in ("lecture", "optional")]
        cell["metadata"].update({"tags": tags} if tags else {})
    assert once == expected


def test_an_anchor_on_two_cells_picks_the_one_where_it_is_a_heading():
    cells = plan_notebook()["cells"]
    assert lecture_plan._find_cell(cells, "1. A section") == 2
    assert lecture_plan._find_cell(cells, "nowhere") is None
    assert lecture_plan._find_cell([md("x y"), md("x y")], "x y") is None


def test_missing_anchor_is_a_one_line_error_naming_notebook_and_anchor(small_plan, tmp_path, capsys):
    broken = plan_notebook()
    broken["cells"][3]["source"] = "other(x)"
    path = tmp_path / "01_small.ipynb"
    path.write_text(slides.notebook_text(broken), encoding="utf-8")
    with pytest.raises(lecture_plan._PlanError, match=r"01_small.ipynb: anchor 'plot\(x\)' names no cell"):
        lecture_plan._apply_plan(broken, path.name)
    before = path.read_text(encoding="utf-8")
    assert lecture_plan.main(["--apply", str(path)]) == 1
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "01_small.ipynb" in error and "'plot(x)'" in error
    assert path.read_text(encoding="utf-8") == before  # nothing written


def test_apply_then_check_on_files(small_plan, tmp_path, capsys):
    path = tmp_path / "01_small.ipynb"
    path.write_text(slides.notebook_text(plan_notebook()), encoding="utf-8")
    other = tmp_path / "09_unplanned.ipynb"
    other.write_text(slides.notebook_text(notebook([md("# 09")])), encoding="utf-8")
    assert lecture_plan.main(["--check", str(path), str(other)]) == 1
    assert lecture_plan.main(["--apply", str(path), str(other)]) == 0
    written = path.read_text(encoding="utf-8")
    assert lecture_plan.main(["--apply", str(path)]) == 0 and path.read_text(encoding="utf-8") == written
    assert lecture_plan.main(["--check", str(path), str(other)]) == 0
    assert "match the plan in 2 notebook(s)" in capsys.readouterr().out
    assert written == slides.notebook_text(json.loads(written))  # Jupyter's own layout


def test_the_plan_covers_two_sessions_of_90_minutes_with_slack():
    assert set(lecture_plan._PLAN) == {nb for ids in lecture_plan.SESSIONS.values() for nb in ids}
    assert lecture_plan.SLACK >= 10
    for ids in lecture_plan.SESSIONS.values():
        assert sum(lecture_plan.MINUTES[nb] for nb in ids) + lecture_plan.SLACK == 90
    for items in lecture_plan._PLAN.values():
        assert len({item.anchor for item in items}) == len(items)


def test_every_anchor_names_one_cell_of_the_stored_notebooks_and_each_deck_fits():
    from tools.site.decks import _MAX_SLIDES, session_notebook, slide_count

    paths = [path for path in sorted(NOTEBOOKS.glob("*.ipynb")) if lecture_plan.notebook_id(path) in
             lecture_plan._PLAN]
    assert len(paths) >= 8
    notebooks = {path.stem: lecture_plan._apply_plan(json.loads(path.read_text(encoding="utf-8")), path.name)
                 for path in paths}  # raises PlanError naming a stale anchor
    for session in lecture_plan.SESSIONS:
        deck = session_notebook(session, notebooks)
        assert deck is not None and slide_count(deck) <= _MAX_SLIDES


def test_stored_notebooks_carry_the_plans_tags():
    paths = [path for path in sorted(NOTEBOOKS.glob("*.ipynb")) if lecture_plan.notebook_id(path) in
             lecture_plan._PLAN]
    if not any(lecture_plan.LECTURE in cell.get("metadata", {}).get("tags", []) for path in paths
               for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]):
        pytest.skip("no notebook carries lecture tags yet: run "
                    "`python -m tools.site.lecture_plan --apply notebooks/*.ipynb`")
    stale = [path.name for path in paths if lecture_plan._apply_to_file(path, check=True)]
    assert not stale, f"run `python -m tools.site.lecture_plan --apply notebooks/*.ipynb`: {stale}"


@pytest.mark.parametrize("module", ["tools.site.slides", "tools.site.lecture_plan"])
def test_the_module_commands_run_from_the_repository_root_without_a_runpy_warning(module):
    import subprocess
    import sys

    path = NOTEBOOKS / "03_attention_decoder.ipynb"
    result = subprocess.run([sys.executable, "-W", "error::RuntimeWarning", "-m", module, "--check", str(path)],
                            cwd=NOTEBOOKS.parent, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
