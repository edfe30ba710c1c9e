"""runtime.set_threads: explicit count, COURSE_THREADS, else torch's own count capped at _MAX_DEFAULT_THREADS, and
never the load of the moment. runtime.course_seed: COURSE_SEED, else the default."""
import pytest
import torch

from course_utils import runtime


@pytest.fixture(autouse=True)
def restore_threads(monkeypatch):
    before = torch.get_num_threads()
    monkeypatch.delenv(runtime._THREADS_ENV, raising=False)
    monkeypatch.delenv(runtime._SEED_ENV, raising=False)
    yield
    torch.set_num_threads(before)


def test_explicit_count_wins(monkeypatch):
    monkeypatch.setenv(runtime._THREADS_ENV, "3")
    assert runtime.set_threads(1) == 1 and torch.get_num_threads() == 1


def test_course_threads_variable(monkeypatch):
    monkeypatch.setenv(runtime._THREADS_ENV, "2")
    assert runtime.set_threads() == 2 and torch.get_num_threads() == 2


@pytest.mark.parametrize("default, expected", [(1, 1), (2, 2), (4, 4), (8, runtime._MAX_DEFAULT_THREADS)])
def test_the_default_is_torchs_count_capped(monkeypatch, default, expected):
    monkeypatch.setattr(runtime, "_TORCH_DEFAULT_THREADS", default)
    assert runtime.default_threads() == expected
    assert runtime.set_threads() == expected and torch.get_num_threads() == expected


@pytest.mark.parametrize("load", [0.0, 0.7, 1.5, 6.5])
def test_the_default_does_not_follow_the_load_average(monkeypatch, load):
    monkeypatch.setattr(runtime, "_TORCH_DEFAULT_THREADS", 2)
    monkeypatch.setattr(runtime.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(runtime.os, "getloadavg", lambda: (load, load, load))
    assert runtime.set_threads() == 2  # the same count right after another job as on a quiet machine


def test_set_threads_says_how_many_and_which_rule(monkeypatch):
    lines = []
    monkeypatch.setenv(runtime._THREADS_ENV, "1")
    assert runtime.set_threads(log=lines.append) == 1
    monkeypatch.delenv(runtime._THREADS_ENV)
    monkeypatch.setattr(runtime, "_TORCH_DEFAULT_THREADS", 8)
    runtime.set_threads(log=lines.append)
    runtime.set_threads(2, log=lines.append)
    waiting = f"; waiting threads: {runtime.wait_policy()}"
    assert lines[0] == f"CPU threads: 1 (from {runtime._THREADS_ENV}){waiting}"
    assert lines[1] == (f"CPU threads: {runtime._MAX_DEFAULT_THREADS} (the default: torch's 8, at most "
                        f"{runtime._MAX_DEFAULT_THREADS}; {runtime._THREADS_ENV}=N sets another count){waiting}")
    assert lines[2] == f"CPU threads: 2 (asked for){waiting}"


def test_course_seed(monkeypatch):
    assert runtime.course_seed() == 0 and runtime.course_seed(5) == 5
    monkeypatch.setenv(runtime._SEED_ENV, " 3 ")
    assert runtime.course_seed(5) == 3
    monkeypatch.setenv(runtime._SEED_ENV, "three")
    with pytest.raises(ValueError, match="COURSE_SEED='three' is not a whole number"):
        runtime.course_seed()
