"""nbval on any valid corpus: the notebooks' checked outputs (# NBVAL_CHECK_OUTPUT) were recorded on the course's
offline mirror (manythings fra-eng 2017-09-29), and most of them print counts, token ids or sentences of that corpus.

On another corpus (the tutorial's data.zip, which the notebooks download when nothing else is found, or any local
copy) the cells still run, with every assertion in them, but their outputs are not compared, and the run says so in
one line. On the mirror nothing changes: every checked output is compared.
"""
from __future__ import annotations

import pytest

_NOTE_KEY = pytest.StashKey[str]()


def _why_outputs_are_not_compared() -> str | None:
    """None when the notebooks will read the offline mirror; else a one-line reason."""
    from course_utils import corpus

    try:
        info = corpus.check_corpus(corpus.find_corpus(download=False))
    except corpus.CorpusError:
        return ("no local corpus yet (the notebooks will download the tutorial's): the notebooks' checked outputs, "
                "recorded on the offline mirror, are not compared; their cells' assertions still run")
    if info.known == corpus.MIRROR_CORPUS:
        return None
    what = info.known.description if info.known else f"not a known corpus ({info.lines:,} lines)"
    return (f"corpus {corpus.display_path(info.path)} is {what}: the notebooks' checked outputs, recorded on the "
            f"offline mirror, are not compared; their cells' assertions still run")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    cells = [item for item in items if type(item).__name__ == "IPyNbCell"]
    if not cells:
        return
    note = _why_outputs_are_not_compared()
    if note is None:
        return
    for cell in cells:
        cell.options["check"] = False
    config.stash[_NOTE_KEY] = note


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    note = config.stash.get(_NOTE_KEY, None)
    if note:
        terminalreporter.write_line(f"nbval: {note}")
