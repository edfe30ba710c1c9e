"""Every notebook's first code cell is the same Colab setup cell, and off Colab it does nothing at all.

The cell is written here, once; to change it, edit SETUP_CELL and run `python tests/test_notebook_setup.py --write`,
which puts it (or its new version) right after each notebook's title.
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import re
import subprocess
import sys
import types
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parent.parent / "notebooks").glob("*.ipynb"))
SETUP_MARK = "# Setup on Google Colab only"
SETUP_CELL = f'''\
# NBVAL_IGNORE_OUTPUT
{SETUP_MARK} (elsewhere this cell does nothing): the course's code and corpus; Colab's own torch is kept.
import sys

if "google.colab" in sys.modules:
    import os
    import subprocess
    REPO = "/content/dissecting-attention"  # README, "On Colab": step 1 clones the course here
    if not os.path.isdir(REPO):
        raise SystemExit(f"Clone the course first: !git clone <the course's git URL> {{REPO}}")
    pip = [sys.executable, "-m", "pip", "install", "-q"]
    subprocess.run(pip + ["--no-deps", "-e", REPO], check=True)  # the package alone: torch is never touched
    subprocess.run(pip + ["sacrebleu>=2.4"], check=True)  # the one dependency Colab lacks
    sys.path.insert(0, REPO)  # importable at once, no runtime restart (an editable install alone needs one)
    subprocess.run([sys.executable, "-m", "course_utils", "data", "check"], cwd=REPO, check=True)  # corpus
    os.chdir(f"{{REPO}}/notebooks")'''


def _setup_index(cells: list[dict]) -> int | None:
    return next((i for i, cell in enumerate(cells) if SETUP_MARK in "".join(cell["source"])), None)


def test_every_notebook_starts_with_the_same_setup_cell():
    for notebook in NOTEBOOKS:
        cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
        first_code = next(i for i, cell in enumerate(cells) if cell["cell_type"] == "code")
        assert _setup_index(cells) == first_code == 1, notebook.name
        assert "".join(cells[1]["source"]) == SETUP_CELL, f"{notebook.name}: run python {__file__} --write"
        assert cells[1]["outputs"] == []


def test_every_cell_has_a_unique_id():  # nbformat 4.5 requires one; Jupyter and nbval warn without it
    for notebook in NOTEBOOKS:
        nb = json.loads(notebook.read_text(encoding="utf-8"))
        ids = [cell.get("id") for cell in nb["cells"]]
        assert (nb["nbformat"], nb["nbformat_minor"]) >= (4, 5) and None not in ids, notebook.name
        assert len(set(ids)) == len(ids), notebook.name


def test_every_notebook_imports_course_utils_before_torch():  # so that the package's OpenMP spin applies
    for notebook in NOTEBOOKS:
        code = "\n".join("".join(cell["source"]) for cell in json.loads(notebook.read_text(encoding="utf-8"))["cells"]
                         if cell["cell_type"] == "code")
        imports = re.findall(r"^\s*(?:from|import)\s+(torch|course_utils)\b", code, re.M)
        assert imports and imports[0] == "course_utils", notebook.name


def test_the_setup_cell_does_nothing_off_colab(monkeypatch):
    monkeypatch.delitem(sys.modules, "google.colab", raising=False)
    before = list(sys.path)
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        exec(compile(SETUP_CELL, "setup-cell", "exec"), {})
    assert out.getvalue() == "" and sys.path == before
    code = [line.split("#")[0] for line in SETUP_CELL.splitlines()]
    assert not any("torch" in line for line in code), "the setup cell must never install (or mention) torch in code"
    assert len(SETUP_CELL.splitlines()) <= 16


def test_on_colab_the_setup_cell_installs_the_package_without_torch_and_needs_no_restart(monkeypatch):
    """Colab simulated: google.colab imported; the commands are recorded instead of run."""
    commands, moved_to = [], []
    monkeypatch.setitem(sys.modules, "google.colab", types.ModuleType("google.colab"))
    monkeypatch.setattr(subprocess, "run", lambda command, **kwargs: commands.append((command, kwargs.get("cwd"))))
    monkeypatch.setattr(os, "chdir", moved_to.append)
    monkeypatch.setattr(os.path, "isdir", lambda path: True)  # cloned by the README's step 1
    monkeypatch.setattr(sys, "path", list(sys.path))
    exec(compile(SETUP_CELL, "setup-cell", "exec"), {})
    repo = "/content/dissecting-attention"
    assert [command[3:] for command, _ in commands[0:2]] == [["install", "-q", "--no-deps", "-e", repo],
                                                             ["install", "-q", "sacrebleu>=2.4"]]
    assert commands[2] == ([sys.executable, "-m", "course_utils", "data", "check"], repo)
    assert not any("torch" in " ".join(command) for command, _ in commands)
    assert sys.path[0] == repo and moved_to == [f"{repo}/notebooks"]  # importable now: no restart


def test_on_colab_without_the_clone_the_setup_cell_says_what_to_do(monkeypatch):
    monkeypatch.setitem(sys.modules, "google.colab", types.ModuleType("google.colab"))
    monkeypatch.setattr(os.path, "isdir", lambda path: False)
    monkeypatch.setattr(subprocess, "run", lambda *args, **kwargs: pytest.fail("nothing may run before the clone"))
    with pytest.raises(SystemExit, match="git clone .* /content/dissecting-attention"):
        exec(compile(SETUP_CELL, "setup-cell", "exec"), {})


def write() -> None:
    """Insert (or refresh) the setup cell as the second cell of every notebook, after the title."""
    for notebook in NOTEBOOKS:
        nb = json.loads(notebook.read_text(encoding="utf-8"))
        cell = {"cell_type": "code", "execution_count": None, "id": "colab-setup", "metadata": {}, "outputs": [],
                "source": SETUP_CELL.splitlines(keepends=True)}
        index = _setup_index(nb["cells"])
        if index is None:
            nb["cells"].insert(1, cell)
        else:
            nb["cells"][index] = cell
        notebook.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"{notebook.name}: setup cell {'refreshed' if index is not None else 'inserted'}")


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit(f"usage: python {sys.argv[0]} --write")
    write()

