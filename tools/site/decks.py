"""The condensed session decks: one reveal.js deck per 90-minute session, from the `lecture`-tagged cells.

`session_notebook(session, notebooks)` assembles one notebook from the cells that lecture_plan tagged `lecture` in
the session's notebooks: a title slide, one title slide per notebook, then one slide per tagged cell, condensed to
fit a 1280x720 screen, with the rest of the cell in reveal.js's speaker notes (key `s`):

| tagged cell                    | on the slide                                         | in the notes           |
|--------------------------------|------------------------------------------------------|------------------------|
| markdown                       | its headings, the first sentence of its first        | the other paragraphs   |
|                                | paragraph, up to two display equations, pictures    |                        |
| code with a figure             | its section's heading and the figure(s)              | the code               |
| code without a figure          | its section's heading, the first _CODE_LINES lines   | the whole code         |
|                                | (markers gone), _OUTPUT_LINES lines of text output   |                        |
| markdown tagged `notes` right  | (nothing)                                            | appended to the slide  |
|   after a tagged cell          |                                                      | of the cell before     |

A cell also tagged `optional` says so on its slide (the one-session cut skips it). A deck has at most _MAX_SLIDES
slides, or the build fails.
"""
from __future__ import annotations

import copy
import re
from typing import Any

from tools.site.learner import strip_markers
from tools.site.lecture_plan import LECTURE, MINUTES, OPTIONAL, SESSION_TITLES, SESSIONS, notebook_id
from tools.site.offline import SiteError

__all__ = ["DECK_CSS", "deck_name", "session_notebook", "slide_count"]

_MAX_SLIDES = 30
_CODE_LINES = 12
_OUTPUT_LINES = 8
_NOTES_TAG = "notes"
DECK_CSS = """
<style type="text/css">
.reveal .slides section { text-align: left; }
.reveal .slides section .jp-RenderedHTMLCommon { font-size: 30px; line-height: 1.35; }
.reveal .slides section h1 { font-size: 1.5em; text-transform: none; }
.reveal .slides section h2 { font-size: 1.3em; text-transform: none; }
.reveal .slides section h3 { font-size: 1.1em; text-transform: none; }
.reveal .slides section .jp-CodeMirrorEditor, .reveal .slides section .highlight pre { font-size: 20px; }
.reveal .slides section .jp-RenderedHTMLCommon code { white-space: pre-wrap; word-break: break-word; }
.reveal .slides section pre { white-space: pre-wrap; word-break: break-word; }
.reveal .slides section img { max-height: 540px; max-width: 1180px; width: auto; object-fit: contain; }
.reveal .slides section .jp-OutputArea-output pre { font-size: 16px; line-height: 1.25; }
.reveal .slides section .course-optional { color: #8a5a00; font-size: 0.6em; margin: 0; }
.reveal .slides section .course-notebook-minutes { color: #555; }
</style>
"""


def _source(cell: dict[str, Any]) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


def _tags(cell: dict[str, Any]) -> list[str]:
    return cell.get("metadata", {}).get("tags", [])


def deck_name(session: int) -> str:
    """The file name of a session's deck: session-1.slides.html."""
    return f"session-{session}.slides.html"


# ------------------------------------------------------------------------------------------- condensing
def _markdown_blocks(text: str) -> list[str]:
    """The blocks of a markdown text: paragraphs split at blank lines, a fenced code block or a $$...$$ display
    kept whole."""
    blocks, current, fence, maths = [], [], None, False
    for line in text.splitlines():
        stripped = line.strip()
        if fence is None and not maths and not stripped:
            if current:
                blocks.append("\n".join(current))
            current = []
            continue
        current.append(line)
        if fence is None and re.match(r"(```|~~~)", stripped):
            fence = stripped[:3]
            if stripped.count(fence) > 1 and len(stripped) > 3:
                fence = None
        elif fence is not None and stripped.startswith(fence):
            fence = None
        elif fence is None and stripped.count("$$") % 2 == 1:
            maths = not maths
    if current:
        blocks.append("\n".join(current))
    return blocks


def _first_sentence(paragraph: str) -> str:
    """The first sentence of a paragraph (up to `.`, `!` or `?` followed by a space and a capital, a code span,
    maths or a parenthesis), on one line."""
    text = " ".join(paragraph.split())
    text = re.sub(r"^([-*+]|\d+\.)\s+", "", text)  # a list's first item
    return re.split(r"(?<=[.!?])\s+(?=[A-Z`*$(\[])", text, maxsplit=1)[0]


def _condense_markdown(text: str) -> tuple[str, str]:
    """(slide, notes) of a markdown cell: the slide keeps the headings, the first sentence of the first
    paragraph after the first heading, up to two display equations and pictures; the notes hold every other
    block (also the paragraphs before the first heading, which end the section before)."""
    slide, notes, sentence_taken, equations = [], [], False, 0
    blocks = _markdown_blocks(text)
    start = next((index for index, block in enumerate(blocks) if re.match(r"#{1,3} ", block)), 0)
    notes += blocks[:start]  # a paragraph that ends the section before: the slide starts at the heading
    for block in blocks[start:]:
        lines = block.splitlines()
        headings = [line for line in lines if re.match(r"#{1,3} ", line)]
        rest = "\n".join(line for line in lines if not re.match(r"#{1,3} ", line)).strip()
        slide += [re.sub(r"^# ", "## ", line) for line in headings]
        if not rest:
            continue
        if rest.startswith("$$") and equations < 2 and len(rest) < 400:
            slide.append(rest)
            equations += 1
        elif rest.startswith("![") or rest.startswith("<img"):
            slide.append(rest)
        elif not sentence_taken and not rest.startswith(("|", "```", "~~~", "<", ">")):
            sentence = _first_sentence(rest)
            slide.append(sentence)
            sentence_taken = True
            remainder = " ".join(rest.split())[len(sentence):].strip()
            if remainder:
                notes.append(remainder)
        else:
            notes.append(rest)
    return "\n\n".join(slide), "\n\n".join(notes)


def _output_lines(output: dict[str, Any]) -> list[str]:
    text = output.get("text", output.get("data", {}).get("text/plain", ""))
    return ("".join(text) if isinstance(text, list) else text).splitlines()


def _condense_code(cell: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """(slide cell, notes) of a code cell: a cell with a figure shows only its figures; another shows its first
    _CODE_LINES lines and _OUTPUT_LINES lines of text output. The notes hold the whole code."""
    code = strip_markers(_source(cell)).strip("\n")
    outputs = cell.get("outputs", [])
    figures = [output for output in outputs if "image/png" in output.get("data", {})]
    slide = {"cell_type": "code", "execution_count": None, "metadata": {}, "source": code, "outputs": []}
    if figures:
        slide["metadata"]["transient"] = {"remove_source": True}
        slide["outputs"] = [{"output_type": "display_data", "metadata": output.get("metadata", {}),
                             "data": {"image/png": output["data"]["image/png"]}} for output in figures]
    else:
        lines = code.splitlines()
        if len(lines) > _CODE_LINES:
            slide["source"] = "\n".join(lines[:_CODE_LINES] + ["# ... (the whole cell is in the notes)"])
        text = [line for output in outputs for line in _output_lines(output)]
        if text:
            shown = text[:_OUTPUT_LINES] + ([f"... ({len(text) - _OUTPUT_LINES} more lines)"]
                                           if len(text) > _OUTPUT_LINES else [])
            slide["outputs"] = [{"output_type": "stream", "name": "stdout", "text": "\n".join(shown) + "\n"}]
    return slide, f"```python\n{code}\n```"


# ------------------------------------------------------------------------------------------- the deck
def _markdown(text: str, slide_type: str) -> dict[str, Any]:
    return {"cell_type": "markdown", "metadata": {"slideshow": {"slide_type": slide_type}}, "source": text}


def _title(notebook: dict[str, Any], stem: str) -> str:
    first = next((_source(cell) for cell in notebook.get("cells", []) if cell.get("cell_type") == "markdown"), "")
    match = re.search(r"^# (.+)$", first, flags=re.MULTILINE)
    return match.group(1).strip() if match else stem


def _notebook_cells(stem: str, notebook: dict[str, Any]) -> list[dict[str, Any]]:
    """The deck's cells for one notebook: its title slide, then a slide (and notes) per tagged cell."""
    key = notebook_id(f"{stem}.ipynb")
    minutes = f"\n\n<p class=\"course-notebook-minutes\">about {MINUTES[key]} minutes</p>" if key in MINUTES else ""
    cells = [_markdown(f"## {_title(notebook, stem)}{minutes}", "slide")]
    pending_notes: list[str] = []

    def flush() -> None:
        if pending_notes:
            cells.append(_markdown("\n\n".join(pending_notes), "notes"))
            pending_notes.clear()

    heading = _title(notebook, stem)  # the section a code slide belongs to: the last heading before it
    for index, cell in enumerate(notebook.get("cells", [])):
        tags = _tags(cell)
        if cell.get("cell_type") == "markdown":
            found = re.findall(r"^#{1,3} (.+)$", _source(cell), flags=re.MULTILINE)
            heading = found[-1].strip() if found else heading
        if LECTURE in tags:
            flush()
            badge = '<p class="course-optional">optional: the one-session cut skips this</p>\n\n' \
                if OPTIONAL in tags else ""
            if cell.get("cell_type") == "code":
                slide, notes = _condense_code(cell)
                slide["metadata"]["slideshow"] = {"slide_type": "-"}
                cells += [_markdown(f"{badge}### {heading}", "slide"), slide]
            else:
                text, notes = _condense_markdown(_source(cell))
                if index == 0:
                    cells.pop(0)  # the notebook's own title cell is its title slide
                    text += minutes
                cells.append(_markdown(badge + text, "slide"))
            pending_notes.append(notes) if notes else None
        elif _NOTES_TAG in tags and cell.get("cell_type") == "markdown" and len(cells) > 1:
            pending_notes.append(_source(cell))
    flush()
    return cells


def session_notebook(session: int, notebooks: dict[str, dict[str, Any]]) -> dict[str, Any] | None:
    """One notebook holding session `session`'s condensed deck from `notebooks` (file stem -> notebook; those
    of other sessions are ignored); None if none of them has a `lecture` cell. Raises SiteError if the deck
    would have more than _MAX_SLIDES slides."""
    stems = sorted(stem for stem in notebooks if notebook_id(f"{stem}.ipynb") in SESSIONS[session]
                   and any(LECTURE in _tags(cell) for cell in notebooks[stem].get("cells", [])))
    if not stems:
        return None
    total = sum(MINUTES.get(notebook_id(f"{stem}.ipynb"), 0) for stem in stems)
    listing = "\n".join(f"- {_title(notebooks[stem], stem)}" for stem in stems)
    cells = [_markdown(f"# {SESSION_TITLES[session]}\n\n{listing}\n\n<p class=\"course-notebook-minutes\">"
                       f"{total} minutes; key <kbd>s</kbd> opens the speaker notes</p>", "slide")]
    for stem in stems:
        cells += _notebook_cells(stem, copy.deepcopy(notebooks[stem]))
    deck = {"cells": cells, "metadata": copy.deepcopy(notebooks[stems[0]].get("metadata", {})),
            "nbformat": 4, "nbformat_minor": 5}
    deck["metadata"].pop("widgets", None)
    for number, cell in enumerate(cells):
        cell["id"] = f"deck-{number}"
    count = slide_count(deck)
    if count > _MAX_SLIDES:
        raise SiteError(f"{deck_name(session)} would have {count} slides (at most {_MAX_SLIDES}): tag fewer cells "
                        f"`lecture` in tools/site/lecture_plan.py")
    return deck


def slide_count(deck: dict[str, Any]) -> int:
    """The number of slides of an assembled deck."""
    return sum(cell["metadata"].get("slideshow", {}).get("slide_type") in ("slide", "subslide")
               for cell in deck["cells"])
