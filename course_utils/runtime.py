"""Where and how the code runs: device, fast mode, CPU threads and turns, seeds, eval mode, progress lines (the
package reads COURSE_FAST, COURSE_THREADS, COURSE_CPU_TURNS, COURSE_SEED here). Introduced in notebook 01 (fast
mode); `resolve_device` in 02."""
from __future__ import annotations

import contextlib
import os
import tempfile
import threading
import time
from collections.abc import Callable, Iterator

import torch
from torch import nn

__all__ = ["fast_mode", "resolve_device", "eval_mode", "default_threads", "set_threads", "wait_policy", "cpu_turn",
           "course_seed", "Log", "reporter"]

Log = Callable[[str], None] | None  # where progress lines go: `print` (the default), any f(line), or None: silence

_FAST_ENV = "COURSE_FAST"  # COURSE_FAST=1: recipes train briefly (CI, smoke tests) and cache as "<name>-fast"
_DEVICE_FIX = "use --device cpu, or auto (CUDA when present)"
_THREADS_ENV = "COURSE_THREADS"  # COURSE_THREADS=N: set_threads() uses N CPU threads
_MAX_DEFAULT_THREADS = 4  # the course's small matrix products gain little past 4 threads
_TORCH_DEFAULT_THREADS = torch.get_num_threads()  # torch's own choice (one per physical core), before any change
_SEED_ENV = "COURSE_SEED"  # COURSE_SEED=N: every model the course trains from here on is seeded with N
_TURNS_ENV = "COURSE_CPU_TURNS"  # COURSE_CPU_TURNS=0: training steps on the CPU do not take turns (cpu_turn)
_TURN_SECONDS = 0.2  # a turn holds the steps that fit in this time (one at least): trainings share time, not steps
_LONGEST_TURN_SECONDS = 1.0  # or as long as this process waited for its turn, up to this: long steps are repaid
_TURNS_DIR = "/tmp" if os.path.isdir("/tmp") else tempfile.gettempdir()  # one folder for all users' processes
_IDLE_SECONDS = 0.02  # the cores are given back when no step follows within this time (evaluation, an idle kernel)


def fast_mode() -> bool:
    """True when COURSE_FAST is 1 (or true/yes); read once, at the edge, and passed on. Introduced in notebook 01."""
    return os.environ.get(_FAST_ENV, "").strip().lower() in ("1", "true", "yes")


def resolve_device(device: str | torch.device = "auto") -> torch.device:
    """"auto" -> CUDA when available, else CPU; other names are checked to exist here. Introduced in notebook 02.

    Raises ValueError (the device and the fix) for an unknown name or a device this machine or build lacks."""
    if str(device) == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        resolved = torch.device(device)
    except (RuntimeError, TypeError) as error:
        raise ValueError(f"unknown device {str(device)[:40]!r}: expected auto, cpu, cuda, cuda:N or mps; "
                         f"{_DEVICE_FIX}") from error
    if resolved.type == "cuda":
        if not torch.cuda.is_available():
            why = "this PyTorch build has no CUDA" if torch.version.cuda is None else "no CUDA GPU is visible"
            raise ValueError(f"device {str(device)!r} asked for, but {why}; {_DEVICE_FIX}")
        if resolved.index is not None and resolved.index >= torch.cuda.device_count():
            raise ValueError(f"device {str(device)!r} asked for, but this machine has "
                             f"{torch.cuda.device_count()} CUDA GPU(s) (cuda:0..); {_DEVICE_FIX}")
    elif resolved.type == "mps" and not (hasattr(torch.backends, "mps") and torch.backends.mps.is_available()):
        raise ValueError(f"device {str(device)!r} asked for, but Apple's MPS is not available here; {_DEVICE_FIX}")
    elif resolved.type not in ("cpu", "cuda", "mps"):
        raise ValueError(f"device {str(device)!r} cannot run the course's models; {_DEVICE_FIX}")
    return resolved


@contextlib.contextmanager
def eval_mode(model: nn.Module) -> Iterator[nn.Module]:
    """`model` in eval mode (dropout off) inside the block; its previous mode restored after, also on error."""
    was_training = model.training
    try:
        yield model.eval()
    finally:
        model.train(was_training)


def reporter(log: Log) -> Callable[[str], None]:
    """`log` itself, or a function that drops every line when `log` is None."""
    return log if log is not None else lambda _line: None


def default_threads() -> int:
    """torch's own count (one per physical core, or OMP_NUM_THREADS), at most 4: fixed per machine, not by its load."""
    return max(1, min(_TORCH_DEFAULT_THREADS, _MAX_DEFAULT_THREADS))


def set_threads(threads: int | None = None, log: Callable[[str], None] | None = None) -> int:
    """Set and return torch's CPU thread count: `threads`, else COURSE_THREADS, else default_threads(). `log` gets
    one line: the count, the rule that gave it and the wait policy. The count decides the exact losses."""
    if threads is not None:
        source = "asked for"
    elif os.environ.get(_THREADS_ENV, "").strip():
        threads, source = int(os.environ[_THREADS_ENV]), f"from {_THREADS_ENV}"
    else:
        threads, source = default_threads(), (f"the default: torch's {_TORCH_DEFAULT_THREADS}, at most "
                                               f"{_MAX_DEFAULT_THREADS}; {_THREADS_ENV}=N sets another count")
    torch.set_num_threads(threads := max(1, threads))
    if log is not None:
        log(f"CPU threads: {threads} ({source}); waiting threads: {wait_policy()}")
    return threads


def wait_policy() -> str:
    """How idle OpenMP threads wait: OMP_WAIT_POLICY ("passive": sleep, "active"), else GOMP_SPINCOUNT (spin that
    many rounds, then sleep), else OpenMP's default (spin a while, then sleep); and whether trainings take turns."""
    if policy := os.environ.get("OMP_WAIT_POLICY", "").strip().lower():
        waiting = policy
    elif spin := os.environ.get("GOMP_SPINCOUNT", "").strip():
        waiting = f"spin {spin} rounds, then sleep (GOMP_SPINCOUNT)"
    else:
        waiting = "OpenMP's default (spin, then sleep)"
    turns = "on" if _turns_wanted() else f"off ({_TURNS_ENV}=0)"
    return f"{waiting}; training and evaluation steps on the CPU take turns with other course processes: {turns}"


class _Turns:
    """Lock files shared by every course process on the machine: a gate, one file per core, and a queue. A step
    holds as many core files as it has threads; only the holder of the gate takes cores, so nobody deadlocks, and a
    process that just finished its turn queues at the gate behind the one waiting for its cores (they alternate).
    A process that waits holds the queue shared; while nobody waits, the cores are given back after every step."""

    def __init__(self) -> None:
        import fcntl  # POSIX only: elsewhere the first turn fails and steps run without turns
        self.fcntl, self.files = fcntl, {}
        self.depth, self.held, self.lock = 0, [], threading.RLock()
        self.began, self.turn, self.step, self.ended = 0.0, 0.0, 0.0, 0.0  # when this process took its cores, for
        # how long, its last step's seconds and end; `kept`: set while it keeps them between steps (the watcher)
        self.kept, self.watcher = threading.Event(), None
        self.cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1

    def file(self, name: str) -> int:
        if name not in self.files:
            path = os.path.join(_TURNS_DIR, f"course_utils.{name}")
            try:  # another user's file is opened, not created (sticky /tmp refuses O_CREAT on it)
                self.files[name] = os.open(path, os.O_RDONLY)
            except FileNotFoundError:
                self.files[name] = os.open(path, os.O_RDONLY | os.O_CREAT, 0o644)
        return self.files[name]

    def take(self) -> None:
        flock, wanted = self.fcntl.flock, min(torch.get_num_threads(), self.cores)
        try:  # every lock below is given back in `finally`, also when a wait is cut short (Ctrl-C)
            flock(self.file("queue"), self.fcntl.LOCK_SH)  # "one waits": else the holder keeps no cores between steps
            flock(self.file("gate"), self.fcntl.LOCK_EX)
            for core in range(self.cores):  # the free cores first, without waiting
                if len(self.held) < wanted:
                    with contextlib.suppress(BlockingIOError):
                        flock(self.file(f"core{core}"), self.fcntl.LOCK_EX | self.fcntl.LOCK_NB)
                        self.held.append(core)
            for core in [core for core in range(self.cores) if core not in self.held][:wanted - len(self.held)]:
                flock(self.file(f"core{core}"), self.fcntl.LOCK_EX)  # then wait for busy ones
                self.held.append(core)
        except BaseException:
            self.give()
            raise
        finally:
            flock(self.file("gate"), self.fcntl.LOCK_UN)
            flock(self.file("queue"), self.fcntl.LOCK_UN)

    def others_wait(self) -> bool:
        try:
            self.fcntl.flock(self.file("queue"), self.fcntl.LOCK_EX | self.fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        self.fcntl.flock(self.file("queue"), self.fcntl.LOCK_UN)
        return False

    def give(self) -> None:
        for core in self.held:
            self.fcntl.flock(self.file(f"core{core}"), self.fcntl.LOCK_UN)
        self.held = []

    def watch(self) -> None:
        """A daemon thread: gives the kept cores back once no step has followed for _IDLE_SECONDS."""
        while self.kept.wait():
            time.sleep(_IDLE_SECONDS)
            with self.lock:
                if self.depth == 0 and time.monotonic() - self.ended >= _IDLE_SECONDS:
                    self.give()
                    self.kept.clear()


_turns: _Turns | None = None  # this process's lock files, opened at its first turn; a forked child opens its own
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=lambda: globals().update(_turns=None))


def _turns_wanted() -> bool:
    return os.environ.get(_TURNS_ENV, "").strip().lower() not in ("0", "false", "no", "off")


@contextlib.contextmanager
def cpu_turn(device: torch.device) -> Iterator[None]:
    """Inside the block, this process holds as many of the machine's cores as it has torch threads, while other
    course processes that want them wait (on a CPU `device`; elsewhere, or with COURSE_CPU_TURNS=0, it does
    nothing). A turn holds the steps that fit in _TURN_SECONDS, or in the time this process waited for it (up to
    _LONGEST_TURN_SECONDS), one step at least, each following the last within _IDLE_SECONDS: two trainings share the
    time about equally whatever their step sizes, instead of slowing each other with threads that spin for a core
    the other holds (benchmarks/results/contention.md); no number changes.
    A machine without POSIX file locks, or a /tmp that cannot hold them, runs steps without turns."""
    global _turns
    if torch.device(device).type != "cpu" or not _turns_wanted():
        yield
        return
    try:
        _turns = _turns or _Turns()
    except (ImportError, OSError):
        yield
        return
    with _turns.lock:
        if _turns.depth == 0:
            if _turns.held and time.monotonic() - _turns.began + _turns.step > _turns.turn:
                _turns.give()  # the next step would not fit in this turn: queue again, behind a process that waits
            if not _turns.held:
                with contextlib.suppress(OSError):  # a lock file that cannot be opened: no turn for this step
                    asked = time.monotonic()
                    _turns.take()
                    _turns.began = time.monotonic()
                    _turns.turn = max(_TURN_SECONDS, min(_turns.began - asked, _LONGEST_TURN_SECONDS))
        _turns.depth, started = _turns.depth + 1, time.monotonic()
        try:
            yield
        finally:
            _turns.depth -= 1
            if _turns.depth == 0 and _turns.held:
                _turns.ended = time.monotonic()
                _turns.step = _turns.ended - started
                with contextlib.suppress(OSError):
                    if not _turns.others_wait():
                        _turns.give()  # nobody waits: the next step takes the cores again at once
                    elif not _turns.kept.is_set():  # someone waits: keep them for this turn, the watcher guards idling
                        if _turns.watcher is None:
                            _turns.watcher = threading.Thread(target=_turns.watch, daemon=True)
                            _turns.watcher.start()
                        _turns.kept.set()


def course_seed(default: int = 0) -> int:
    """COURSE_SEED when set (another run of the whole course), else `default`; cached models keep their own seed.
    Raises ValueError for a value that is not a whole number. Introduced in notebook 05."""
    if not (value := os.environ.get(_SEED_ENV, "").strip()):
        return default
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"{_SEED_ENV}={value[:20]!r} is not a whole number: set it to e.g. 1, or unset it") from None
