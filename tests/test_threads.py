"""runtime.set_threads: explicit count, COURSE_THREADS, else the cores idle now."""
import pytest
import torch

from course_utils import runtime


@pytest.fixture(autouse=True)
def restore_threads(monkeypatch):
    before = torch.get_num_threads()
    monkeypatch.delenv(runtime.THREADS_ENV, raising=False)
    yield
    torch.set_num_threads(before)


def test_explicit_count_wins(monkeypatch):
    monkeypatch.setenv(runtime.THREADS_ENV, "3")
    assert runtime.set_threads(1) == 1 and torch.get_num_threads() == 1


def test_course_threads_variable(monkeypatch):
    monkeypatch.setenv(runtime.THREADS_ENV, "2")
    assert runtime.set_threads() == 2 and torch.get_num_threads() == 2


@pytest.mark.parametrize("cores, load, default, expected", [
    (2, 0.1, 2, 2),  # idle 2-core machine: torch's default, one thread per core
    (2, 0.7, 2, 1),  # one core's worth busy elsewhere: one thread
    (2, 6.5, 2, 1),  # a busy shared machine: one thread, never zero
    (16, 3.0, 8, 8),  # hyperthreads: never more than torch's default (physical cores)
    (16, 10.2, 8, 6),
])
def test_idle_cores_decide_without_a_count(monkeypatch, cores, load, default, expected):
    monkeypatch.setattr(runtime.os, "cpu_count", lambda: cores)
    monkeypatch.setattr(runtime.os, "getloadavg", lambda: (load, load, load))
    monkeypatch.setattr(runtime, "_TORCH_DEFAULT_THREADS", default)
    assert runtime.set_threads() == expected and torch.get_num_threads() == expected


def test_set_threads_says_how_many_and_where_the_number_came_from(monkeypatch):
    lines = []
    monkeypatch.setenv(runtime.THREADS_ENV, "1")
    assert runtime.set_threads(log=lines.append) == 1
    monkeypatch.delenv(runtime.THREADS_ENV)
    runtime.set_threads(log=lines.append)
    assert lines[0] == f"CPU threads: 1 (from {runtime.THREADS_ENV})"
    assert lines[1].startswith("CPU threads: ") and f"{runtime.THREADS_ENV}=N fixes the count" in lines[1]
