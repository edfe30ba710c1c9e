"""The lecture plan as data: which cells of each notebook make the condensed session decks, as cell tags.

    python -m tools.site.lecture_plan --apply notebooks/*.ipynb   # write the plan's tags into the cells
    python -m tools.site.lecture_plan --check notebooks/*.ipynb   # exit 1 if a notebook's tags differ

`_PLAN` maps a notebook id ("00" ... "07", the NN of notebooks/NN_name.ipynb) to its planned cells, in notebook
order: a unique text `anchor` (a substring of one cell's source, usually a heading) and whether the cell is
`optional` (skipped in the one-session cut). Every planned cell gets the tag `lecture` (it makes a slide of its
session's deck) and an optional one also `optional`. `SESSIONS` says which notebooks each 90-minute session
covers; notebooks/LECTURE_PLAN.md is the same plan in prose, with minutes.

An anchor is unique if exactly one cell contains it, or, failing that, exactly one cell has it on a heading line.
Applying the plan is idempotent: it sets the two tags on the planned cells, removes them from every other cell and
touches nothing else. A notebook the plan does not know (an appendix, say) loses any such tags.
"""
from __future__ import annotations

import argparse
import copy
import json
import re
import sys
from pathlib import Path
from typing import Any, NamedTuple

from tools.site.slides import notebook_text

__all__ = ["LECTURE", "MINUTES", "OPTIONAL", "SESSIONS", "SESSION_TITLES", "main", "notebook_id"]

LECTURE = "lecture"    # the cell makes a slide of its session's condensed deck
OPTIONAL = "optional"  # ... that the one-session cut skips
SESSIONS = {1: ("00", "01", "02", "03"), 2: ("04", "05", "06", "07")}
SESSION_TITLES = {1: "Session 1 · From a sentence to one attention step (notebooks 00-03, nothing trained)",
                  2: "Session 2 · Scores, training, heatmaps and decoding (notebooks 04-07, trained models)"}
MINUTES = {"00": 15, "01": 15, "02": 20, "03": 30,   # session 1: 80 minutes planned
           "04": 20, "05": 25, "06": 20, "07": 15}   # session 2: 80 minutes planned
SLACK = 10  # minutes of each 90-minute session left free: questions, a failing widget, a slow kernel


class _PlanItem(NamedTuple):
    """One planned cell: a substring of its source that names it, and whether the one-session cut skips it."""

    anchor: str
    optional: bool = False


def _lecture(*anchors: str) -> list[_PlanItem]:
    return [_PlanItem(anchor) for anchor in anchors]


def _optional(anchor: str) -> _PlanItem:
    return _PlanItem(anchor, optional=True)


_PLAN: dict[str, list[_PlanItem]] = {
    # ---------------------------------------------------------------- session 1: nothing trained (80 + 10 min)
    "00": [*_lecture("## 1. The bottleneck", 'fig, ax = plt.subplots(figsize=(6.5, 3.2), layout="constrained")',
                     "## 2. One attention map", "T = len(shown.output_tokens)", "## 3. Queries, keys and values")],
    "01": [*_lecture("## 6. The leak-free split", "### The course's form: a padded batch"),
           _optional("### Bucketing by length")],
    "02": [*_lecture("## 2. `nn.GRU` and its two layouts", "## 6. Outputs versus the final hidden state",
                     "## 7. What padding does to the final state"),
           _optional("other = by_length(3)[1]"),
           *_lecture("### The fix: packing")],
    "03": [*_lecture("## 2. Content-based attention, one step by hand", "### 2.1 Scores", "### 2.2 The masked softmax"),
           _optional("### 2.3 The context vector, three ways"),
           *_lecture("### 2.5 The package's step is the manual step", "## 3. Masking, and what goes wrong without it",
                     "## 4. Teacher forcing versus feeding back predictions"),
           _optional("## 6. A score that never reads the encoder")],
    # ---------------------------------------------------------------- session 2: trained models (80 + 10 min)
    "04": [*_lecture("## 1. Four scoring functions on the same query and keys",
                     "### 1.6 Scaled dot product: the bridge to Transformers"),
           _optional("## 2. Luong's concat is Bahdanau's additive score"),
           *_lecture("## 3. Where attention sits in each decoder")],
    "05": [*_lecture("## 1. The loss", "## 2. One training step by hand", "### BLEU, the dev and test score",
                     "## 5. Attention versus no attention"),
           _optional("### On sentences whose English is new")],
    "06": [*_lecture("## 2. Two numbers to read a heatmap", "## 3. Well and badly translated sentences",
                     "## 4. Reordering: the adjective after the noun"),
           _optional("## 5. Bahdanau and Luong side by side"),
           *_lecture("## 6. What attention does and does not explain", "## 7. An interactive explorer")],
    "07": [*_lecture("## 2. One step of the decoder, and greedy decoding"),
           _optional("## 3. Sampling: temperature and top-k"),
           *_lecture("## 4. Beam search, one step at a time", "## 5. Corpus scores")],
}


class _PlanError(ValueError):
    """An anchor of the plan names no cell, or more than one, of its notebook."""


def notebook_id(path: Path | str) -> str:
    """"03" for notebooks/03_attention_decoder.ipynb (the NN of NN_name); "" for a name without one."""
    match = re.match(r"(\d\d)_", Path(path).name)
    return match.group(1) if match else ""


def _source(cell: dict[str, Any]) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


def _find_cell(cells: list[dict[str, Any]], anchor: str) -> int | None:
    """The index of the one cell that `anchor` names (see the module's docstring); None if none or several."""
    hits = [index for index, cell in enumerate(cells) if anchor in _source(cell)]
    if len(hits) == 1:
        return hits[0]
    headed = [index for index in hits if any(anchor in line for line in _source(cells[index]).splitlines()
                                             if re.match(r"#{1,3} ", line))
              and cells[index].get("cell_type") == "markdown"]
    return headed[0] if len(headed) == 1 else None


def _apply_plan(notebook: dict[str, Any], notebook_name: str) -> dict[str, Any]:
    """A copy of `notebook` with the plan's tags for notebook `notebook_name` (a file name such as
    "03_attention_decoder.ipynb" or an id "03"): `lecture` (and `optional`) on the planned cells, neither on
    any other; nothing else differs. Raises _PlanError naming the notebook and the anchor that names no cell."""
    key = notebook_name if re.fullmatch(r"\d\d", notebook_name) else notebook_id(notebook_name)
    result = copy.deepcopy(notebook)
    cells = result.get("cells", [])
    wanted: dict[int, list[str]] = {}
    for item in _PLAN.get(key, []):
        index = _find_cell(cells, item.anchor)
        if index is None:
            count = sum(item.anchor in _source(cell) for cell in cells)
            problem = "names no cell" if count == 0 else f"names {count} cells"
            raise _PlanError(f"{notebook_name}: anchor {item.anchor!r} {problem}; edit _PLAN in "
                             f"tools/site/lecture_plan.py to match the notebook's text")
        wanted[index] = [LECTURE, OPTIONAL] if item.optional else [LECTURE]
    for index, cell in enumerate(cells):
        metadata = cell.setdefault("metadata", {})
        tags = [tag for tag in metadata.get("tags", []) if tag not in (LECTURE, OPTIONAL)] + wanted.get(index, [])
        if tags:
            metadata["tags"] = tags
        else:
            metadata.pop("tags", None)
    return result


def _store(path: Path, notebook: dict[str, Any], tagged: dict[str, Any], check: bool) -> bool:
    """Write `tagged` over `path` in Jupyter's layout when it differs from `notebook` (unless `check`); True if
    it differs."""
    changed = tagged != notebook
    if changed and not check:
        path.write_text(notebook_text(tagged), encoding="utf-8")
    return changed


def _apply_to_file(path: Path, check: bool = False) -> bool:
    """Write the plan's tags into the notebook at `path` (with `check`, only compare); True if it was (or would
    be) changed. Raises _PlanError for an anchor that names no cell."""
    notebook = json.loads(path.read_text(encoding="utf-8"))
    return _store(path, notebook, _apply_plan(notebook, path.name), check)


def main(argv: list[str] | None = None) -> int:
    """`python -m tools.site.lecture_plan (--apply | --check) NB ...`."""
    parser = argparse.ArgumentParser(prog="python -m tools.site.lecture_plan",
                                     description="Write (or check) the lecture plan's cell tags (lecture, "
                                                 "optional) in the notebooks.")
    parser.add_argument("notebooks", nargs="+", type=Path)
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--apply", action="store_true", help="write the tags into the notebooks")
    mode.add_argument("--check", action="store_true", help="change nothing; exit 1 if any notebook's tags differ")
    args = parser.parse_args(argv)
    missing = [path for path in args.notebooks if not path.is_file()]
    if missing:
        print(f"error: no such notebook: {', '.join(map(str, missing))}", file=sys.stderr)
        return 1
    errors, loaded, planned = [], {}, {}
    for path in args.notebooks:  # every anchor checked before any file is written
        try:
            loaded[path] = json.loads(path.read_text(encoding="utf-8"))
            planned[path] = _apply_plan(loaded[path], path.name)
        except _PlanError as error:
            errors.append(f"error: {error}")
    if errors:
        print("\n".join(errors), file=sys.stderr)
        return 1
    changed = [path for path in args.notebooks if _store(path, loaded[path], planned[path], args.check)]
    for path in changed:
        print(f"{'lecture tags differ from the plan' if args.check else 'lecture tags written'}: {path}")
    if not changed:
        print(f"lecture tags match the plan in {len(args.notebooks)} notebook(s)")
    return 1 if args.check and changed else 0


if __name__ == "__main__":
    sys.exit(main())
