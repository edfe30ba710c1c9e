"""The course's shape, by one yardstick (tools/reading_time.py: the minutes a student needs to read a notebook):
a core path 00-07 a student finishes, further notebooks 08-10, appendices A1... beside them; every notebook states
its time; the evidence (properties and observations) sits in one final section, and no prose names a test file."""
import importlib.util
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
CORE = [nb for nb in NOTEBOOKS if re.match(r"0[0-7]_", nb.name)]
FURTHER = [nb for nb in NOTEBOOKS if re.match(r"(0[89]|1\d)_", nb.name)]
APPENDICES = [nb for nb in NOTEBOOKS if re.match(r"A\d_", nb.name)]
FINAL_SECTION = "## Your run beside the stored run"
TEST_NAME = re.compile(r"tests/test_\w+|\btest_\w+\(|::test_\w+")


def _yardstick():
    spec = importlib.util.spec_from_file_location("reading_time", ROOT / "tools" / "reading_time.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


YARDSTICK = _yardstick()


def minutes(notebook: Path) -> float:
    cells = json.loads(notebook.read_text())["cells"]
    return sum(YARDSTICK.cell_minutes(cell) for cell in cells)  # every cell counts, tagged or not


def test_the_yardstick_is_the_shared_one_where_that_is_at_hand():
    shared = ROOT.parent / "shared" / "tools" / "reading_time.py"
    if not shared.exists():
        pytest.skip("../shared/tools/reading_time.py is not beside this clone (only the course's own machines have it)")
    assert shared.read_text() == (ROOT / "tools" / "reading_time.py").read_text()


def test_the_notebooks_are_a_core_path_further_notebooks_and_appendices():
    assert [nb.name[:2] for nb in CORE] == [f"0{i}" for i in range(8)]
    assert [nb.name[:2] for nb in FURTHER] == ["08", "09", "10"]
    assert APPENDICES and set(NOTEBOOKS) == set(CORE + FURTHER + APPENDICES)


def test_each_core_notebook_takes_at_most_40_minutes_and_the_core_path_at_most_270():
    taken = {nb.name: round(minutes(nb), 1) for nb in CORE}
    assert all(m <= 40 for m in taken.values()), taken
    assert sum(taken.values()) <= 270, taken


def test_each_further_notebook_takes_at_most_45_minutes():
    taken = {nb.name: round(minutes(nb), 1) for nb in FURTHER}
    assert all(m <= 45 for m in taken.values()), taken


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda nb: nb.stem)
def test_the_stated_time_is_within_15_percent_of_the_yardstick(notebook):
    cells = json.loads(notebook.read_text())["cells"]
    stated = YARDSTICK.stated_minutes(cells)
    assert stated is not None, f"{notebook.name}: no '**Time:** about NN min' line"
    assert abs(stated - minutes(notebook)) <= 0.15 * minutes(notebook), (stated, round(minutes(notebook), 1))


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda nb: nb.stem)
def test_no_markdown_names_a_test_file(notebook):
    cells = json.loads(notebook.read_text())["cells"]
    named = [TEST_NAME.search("".join(c["source"])).group() for c in cells
             if c["cell_type"] == "markdown" and TEST_NAME.search("".join(c["source"]))]
    assert not named, f"{notebook.name}: {named}"


def _output_text(cell: dict) -> str:
    texts = []
    for output in cell.get("outputs", []):
        text = output.get("text") or output.get("data", {}).get("text/plain") or ""
        texts.append("".join(text) if isinstance(text, list) else text)
    return "\n".join(texts)


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda nb: nb.stem)
def test_the_evidence_is_reported_once_in_the_final_section_and_nowhere_else(notebook):
    cells = json.loads(notebook.read_text())["cells"]
    code = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
    headings = [i for i, c in enumerate(cells) if c["cell_type"] == "markdown"
                and "".join(c["source"]).lstrip().startswith(FINAL_SECTION)]
    evidence_lines = re.compile(r"^(observation \S+:|property: )", re.M)
    before = headings[0] if headings else len(cells)
    stray = [i for i, c in enumerate(cells[:before]) if c["cell_type"] == "code" and evidence_lines.search(
        _output_text(c))]
    assert not stray, f"{notebook.name}: evidence printed in the flow, cells {stray}"
    if "claims.check(" in code or "claims.observe(" in code:
        assert len(headings) == 1, f"{notebook.name}: one '{FINAL_SECTION}' section"
        reports = [i for i, c in enumerate(cells) if "claims.report()" in "".join(c["source"])]
        assert reports and all(i > headings[0] for i in reports), notebook.name
    else:
        assert not headings, f"{notebook.name} makes no claims and needs no evidence section"


# ------------------------------------------------------------------------------------------- the lecture plan
PLAN = ROOT / "notebooks" / "LECTURE_PLAN.md"
SECTION_REFERENCE = re.compile(r"\b(\d\d|A\d) §(\d+(?:\.\d+)?)")
READING = re.compile(r"\b(\d\d|A\d) (?:\(all\)|§(\d+)(?:-§(\d+))?)")


def _notebook(key: str) -> Path:
    return next((ROOT / "notebooks").glob(f"{key}_*.ipynb"))


def _section_starts(cells: list[dict]) -> dict[str, int]:
    """{"2": index, "2.1": index, ...}: the cell of each numbered heading ("## 2. ..." or "### 2.1 ...")."""
    starts = {}
    for index, cell in enumerate(cells):
        if cell["cell_type"] == "markdown":
            for line in "".join(cell["source"]).splitlines():
                if hit := re.match(r"#{2,3} (\d+(?:\.\d+)?)\.? ", line):
                    starts.setdefault(hit.group(1), index)
    return starts


def _section_minutes(key: str, first: str | None, last: str | None) -> float:
    """Yardstick minutes of notebook `key` (None, None: all of it), or of its sections first..last."""
    cells = json.loads(_notebook(key).read_text())["cells"]
    if first is None:
        return sum(YARDSTICK.cell_minutes(cell) for cell in cells)
    starts = _section_starts(cells)
    begin = starts[first]
    later = [i for i, cell in enumerate(cells) if i > starts[last or first] and cell["cell_type"] == "markdown"
             and re.match(r"## ", "".join(cell["source"]).lstrip())]
    end = later[0] if later else len(cells)
    return sum(YARDSTICK.cell_minutes(cell) for cell in cells[begin:end])


def test_every_section_the_lecture_plan_names_is_a_heading():
    text = PLAN.read_text()
    references = SECTION_REFERENCE.findall(text)
    assert len(references) >= 10
    for key, number in references:
        assert number in _section_starts(json.loads(_notebook(key).read_text())["cells"]), f"{key} §{number}"


def test_each_sessions_pre_reading_takes_at_most_45_minutes():
    lines = [line for line in PLAN.read_text().splitlines() if line.startswith("**Pre-reading**")]
    assert len(lines) == 2, "one pre-reading line per session"
    for line in lines:
        total = sum(_section_minutes(key, first or None, last or first or None)
                    for key, first, last in READING.findall(line))
        stated = int(re.search(r"about (\d+) min", line).group(1))
        assert 0 < total <= 45 and abs(stated - total) <= 0.15 * total, (line, round(total, 1))
