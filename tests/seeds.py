"""The course's five source documents (../shared/seeds/, beside a clone on the course's own machines) and the
quotations of them in the notebooks.

A notebook quotes a source in a markdown cell as a marker, then a fenced block of the source's own lines:

    <!-- quote 002 lines 55-59 -->
    ```python
    ...the lines, exactly as the source has them (indentation may be dropped; a line "..." stands for lines left out)
    ```

The numbers are the lines of the source's text in ../shared/seeds/ (1-based, inclusive): the block's first line is
line 55 and its last line 59. The same cell names the source's author.
"""
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SEEDS = ROOT.parent / "shared" / "seeds"
# the seed file's prefix -> the name the notebooks give its author (a quoting cell must contain it)
SOURCES = {
    "000": "Dissected Attention Network",
    "001": "Tae",
    "002": "Kim",
    "003": "Carton",
    "004": "Loye",
}
QUOTE = re.compile(r"<!-- quote (\d{3}) lines (\d+)-(\d+) -->[ \t]*\n```[\w+-]*\n(.*?)\n```", re.S)
ELISION = {"...", "…", "# ...", "[...]"}


def seed_lines(source: str) -> list[str]:
    """The source's text as lines (index 0 is line 1); skips the test when ../shared/seeds/ is not at hand."""
    if not SEEDS.is_dir():
        pytest.skip("../shared/seeds/ is not beside this clone (only the course's own machines have the sources)")
    [path] = SEEDS.glob(f"{source}_*.txt")
    return path.read_text(encoding="utf-8").splitlines()


def quotes(notebook: Path) -> list[tuple[str, int, int, list[str], str]]:
    """Every marked quotation in a notebook's markdown: (source, first, last, the block's lines, the cell's text)."""
    found = []
    for cell in json.loads(notebook.read_text())["cells"]:
        if cell["cell_type"] != "markdown":
            continue
        text = "".join(cell["source"])
        for match in QUOTE.finditer(text):
            source, first, last, block = match.groups()
            found.append((source, int(first), int(last), block.split("\n"), text))
    return found


def mismatches(source: str, first: int, last: int, block: list[str]) -> list[str]:
    """What in `block` is not the source's lines first..last, in order; [] when the quotation is exact."""
    lines = seed_lines(source)
    if not 1 <= first <= last <= len(lines):
        return [f"lines {first}-{last} are outside the source's {len(lines)} lines"]
    quoted = [line for line in block if line.strip() not in ELISION]
    if not quoted:
        return ["the block quotes nothing"]
    if fences := [line for line in quoted if line.strip().startswith("```")]:
        return [f"a fence inside the block breaks the notebook's markdown: {fences[0].strip()!r}"]
    problems, at = [], first - 1  # the next source line (0-based) a quoted line may match
    for line in quoted:
        hits = [i for i in range(at, last) if lines[i].strip() == line.strip()]
        if not hits:
            problems.append(f"not in lines {at + 1}-{last} of {source}: {line.strip()!r}")
            continue
        at = hits[0] + 1
    if not problems:
        if quoted[0].strip() != lines[first - 1].strip():
            problems.append(f"the block does not start at line {first}: {lines[first - 1].strip()!r}")
        if quoted[-1].strip() != lines[last - 1].strip():
            problems.append(f"the block does not end at line {last}: {lines[last - 1].strip()!r}")
    return problems
