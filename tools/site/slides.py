"""Slideshow metadata for the notebooks: every notebook presentable as slides (RISE live, reveal.js exported).

    python -m tools.site.slides notebooks/*.ipynb          # write the metadata into the notebooks
    python -m tools.site.slides --check notebooks/*.ipynb  # exit 1 if a notebook's metadata is missing or stale

`add_slide_metadata(notebook)` sets `cell.metadata.slideshow.slide_type` on every cell from the cell's kind, its
first line and its neighbour, and touches nothing else, so running it cannot change what nbval checks. It is
idempotent: the type depends only on the cells' contents, never on a type set before. A cell keeps a type set by
hand with `"slideshow": {"slide_type": ..., "manual": true}`.

The rules (one horizontal slide per section, its steps below it as sub-slides):

| cell                                                                | slide type |
|---------------------------------------------------------------------|------------|
| the first cell (the notebook's title, `# 01 · ...`)                 | slide      |
| markdown with a `# ` or `## ` heading line (a section; also a cell  | slide      |
|   that ends one section with a paragraph and then starts the next)  |            |
| markdown with a `### ` heading line (a step inside a section)       | subslide   |
| other markdown longer than _NOTES_LINES lines (long prose)          | notes      |
| code before the first section (set-up: Colab, FAST switch, imports) | skip       |
| code tagged `parameters` (papermill's FAST switch)                  | skip       |
| code right after shown markdown (the step the text announces)       | fragment   |
| short markdown right after shown markdown                           | fragment   |
| anything else (after code or notes: a new step)                     | subslide   |

The same types serve RISE in JupyterLab (jupyterlab-rise, requirements.txt: "Render as slideshow", Alt+R) and the
site's exported reveal.js decks; notes show in the speaker view (key `s`). Not about exporting the slides (export).
"""
from __future__ import annotations

import argparse
import copy
import json
import re
import sys
from pathlib import Path
from typing import Any

__all__ = ["add_slide_metadata", "main", "notebook_text"]

_NOTES_LINES = 12  # markdown cells longer than this (and not a heading) become speaker notes
_SLIDE_TYPES = ("slide", "subslide", "fragment", "skip", "notes", "-")


def _source(cell: dict[str, Any]) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


def _line_count(text: str) -> int:
    return len(text.strip("\n").splitlines())


def _heading_level(text: str) -> int | None:
    """The level of the highest heading (`# ` 1, `## ` 2, `### ` 3) on any line of a markdown text outside
    fenced code; None without one. A cell that ends a section and starts the next one counts as the next one."""
    text = re.sub(r"^(```|~~~).*?^\1", "", text, flags=re.DOTALL | re.MULTILINE)
    levels = [len(match.group(1)) for match in re.finditer(r"^(#{1,3}) ", text, flags=re.MULTILINE)]
    return min(levels) if levels else None


def _slide_type(cell: dict[str, Any], index: int, after_text: bool, in_section: bool = True) -> str:
    """The slide type of `cell` at `index` under the rules above. `after_text`: the cell before is markdown shown
    on the slide (not notes); `in_section`: a `## ` heading came before (code before the first one is set-up)."""
    text = _source(cell).lstrip()
    if index == 0:
        return "slide"
    if cell.get("cell_type") == "markdown":
        level = _heading_level(text)
        if level in (1, 2):
            return "slide"
        if level == 3:
            return "subslide"
        if _line_count(text) > _NOTES_LINES:
            return "notes"
    elif cell.get("cell_type") == "code":
        if not in_section or "parameters" in cell.get("metadata", {}).get("tags", []):
            return "skip"
    return "fragment" if after_text else "subslide"


def add_slide_metadata(notebook: dict[str, Any]) -> dict[str, Any]:
    """A copy of `notebook` (nbformat 4 JSON as a dict, or a NotebookNode) with `metadata.slideshow.slide_type`
    set on every cell; nothing else differs. Idempotent."""
    result = copy.deepcopy(notebook)
    after_text, in_section = False, False
    for index, cell in enumerate(result.get("cells", [])):
        in_section = in_section or (cell.get("cell_type") == "markdown" and _heading_level(_source(cell)) in (1, 2)
                                    and index > 0)
        metadata = cell.setdefault("metadata", {})
        existing = metadata.get("slideshow") or {}
        if not (existing.get("manual") and existing.get("slide_type") in _SLIDE_TYPES):
            metadata["slideshow"] = {**existing, "slide_type": _slide_type(cell, index, after_text, in_section)}
        if cell.get("cell_type") != "raw":
            after_text = cell.get("cell_type") == "markdown" and metadata["slideshow"]["slide_type"] != "notes"
    return result


def notebook_text(notebook: dict[str, Any]) -> str:
    """The notebook as Jupyter writes it (one-space indent, sorted keys, UTF-8 as is, final newline), so a file
    rewritten with new metadata differs from the old one only in the metadata lines."""
    return json.dumps(notebook, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def _apply_to_file(path: Path, check: bool = False) -> bool:
    """Add the metadata to the notebook at `path` (or with `check`, only compare); True if it was (or would be)
    changed."""
    text = path.read_text(encoding="utf-8")
    notebook = json.loads(text)
    new_text = notebook_text(add_slide_metadata(notebook))
    changed = new_text != text
    if changed and not check:
        if notebook_text(notebook) != text:
            raise ValueError(f"{path}: not in Jupyter's own JSON layout; open and save it in Jupyter first, so that "
                             "only metadata lines change")
        path.write_text(new_text, encoding="utf-8")
    return changed


def main(argv: list[str] | None = None) -> int:
    """`python -m tools.site.slides NB ... [--check]`: write (or check) the slide metadata of notebooks."""
    parser = argparse.ArgumentParser(prog="python -m tools.site.slides",
                                     description="Add (or check) the slideshow metadata of notebooks.")
    parser.add_argument("notebooks", nargs="+", type=Path)
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if any notebook would change")
    args = parser.parse_args(argv)
    changed = [path for path in args.notebooks if _apply_to_file(path, check=args.check)]
    for path in changed:
        print(f"{'stale slide metadata' if args.check else 'slide metadata written'}: {path}")
    if not changed:
        print(f"slide metadata up to date in {len(args.notebooks)} notebook(s)")
    return 1 if args.check and changed else 0


if __name__ == "__main__":
    sys.exit(main())
