"""benchmarks/learner_run.py: a notebook's raising cell is listed with both its indices, its exception and message,
and the cells after it still run; the options and the environment built for each condition."""
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
try:
    import learner_run
finally:
    sys.path.remove(str(ROOT / "benchmarks"))


def tiny_notebook(folder: Path) -> Path:
    """A markdown cell, then three code cells: fine, raising AssertionError('x'), fine (writes a file)."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# tiny"),
                nbformat.v4.new_code_cell("value = 1"),
                nbformat.v4.new_code_cell("assert value == 2, 'x'"),
                nbformat.v4.new_code_cell("import os, pathlib\n"
                                          "pathlib.Path('after.txt').write_text(os.environ['COURSE_SEED'])")]
    path = folder / "99_tiny.ipynb"
    nbformat.write(nb, path)
    return path


def test_the_raising_cell_is_listed_and_the_later_cell_still_runs(tmp_path):
    path = tiny_notebook(tmp_path)
    env = learner_run.build_env(learner_run.parse_args(["--seed", "7"]), tmp_path, tmp_path / "corpus.txt")
    result = learner_run.execute_notebook(path, env, tmp_path / "executed", cell_timeout=60)
    assert result["errors"] == [dict(notebook="99_tiny", cell=2, code_cell=1, ename="AssertionError", message="x",
                                     expected=False)]
    assert (result["cells"], result["code_cells"], result["ran"], result["raising"], result["aborted"]) == \
        (4, 3, 3, 1, None)
    assert (tmp_path / "after.txt").read_text() == "7"  # ran after the raising cell, in the notebook's folder, env
    assert (tmp_path / "executed" / "99_tiny.ipynb").exists()
    assert learner_run.error_line(result["errors"][0]) == "99_tiny cell 2 (code 1): AssertionError: x"
    assert nbformat.read(path, as_version=4).cells[1].outputs == []  # the source notebook is left as it was


def test_a_bad_option_is_exit_status_2(capsys):
    for argv in (["--corpus", "no-such-corpus.zip"], ["--device", "tpu"], ["--notebooks", "42"], ["--threads", "0"]):
        with pytest.raises(SystemExit) as stopped:
            learner_run.parse_args(argv)
        assert stopped.value.code == 2, argv
    assert "neither mirror, derived nor an existing corpus file" in capsys.readouterr().err


def test_notebooks_are_chosen_by_their_number():
    chosen = learner_run.select_notebooks(["06", "01_data"])
    assert [path.stem for path in chosen] == ["06_heatmaps", "01_data"]
    assert learner_run.select_notebooks(None) == sorted((ROOT / "notebooks").glob("*.ipynb"))


def test_the_environment_of_each_condition(tmp_path):
    base = {"COURSE_FAST": "1", "COURSE_SEED": "3", "COURSE_DATA_DIR": "/old", "PATH": "/bin", "PYTHONPATH": "/site"}
    build = lambda *argv: learner_run.build_env(learner_run.parse_args(list(argv)), tmp_path, tmp_path / "c.zip",
                                                base=base)
    full = build("--seed", "1", "--threads", "2")
    assert full["COURSE_SEED"] == "1" and full["COURSE_THREADS"] == "2" and "COURSE_FAST" not in full
    assert full["COURSE_DATA_DIR"] == str(tmp_path / "data") and full["COURSE_CORPUS"] == str(tmp_path / "c.zip")
    assert full["MPLBACKEND"] == "Agg" and full["PATH"] == "/bin" and "CUDA_VISIBLE_DEVICES" not in full
    assert full["PYTHONPATH"].split(":") == [str(ROOT), "/site"]
    default = build()
    assert "COURSE_SEED" not in default and "COURSE_THREADS" not in default and "COURSE_FAST" not in default
    assert build("--device", "cpu")["CUDA_VISIBLE_DEVICES"] == ""
    assert build("--fast")["COURSE_FAST"] == "1"


def test_passed_needs_pretrain_and_no_raising_cell():
    fine = dict(raising=0, aborted=None)
    assert learner_run.passed(dict(pretrain=dict(status="skipped"), notebooks=[fine]))
    assert not learner_run.passed(dict(pretrain=dict(status="failed"), notebooks=[fine]))
    assert not learner_run.passed(dict(pretrain=dict(status="ok"), notebooks=[fine, dict(raising=1, aborted=None)]))
    assert not learner_run.passed(dict(pretrain=dict(status="ok"), notebooks=[dict(raising=0, aborted="DeadKernel")]))
