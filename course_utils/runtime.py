"""Where and how the code runs: the device, the fast mode of CI, and evaluation mode.

    device = resolve_device("auto")          # CUDA when present, else the CPU
    if fast_mode(): ...                      # COURSE_FAST=1: train briefly (CI, smoke tests)
    with eval_mode(model): ...               # dropout off inside, the model's previous mode restored after
    set_threads()                            # CPU threads for training: COURSE_THREADS, else torch's count, at most 4
    wait_policy()                            # how idle OpenMP threads wait: OMP_WAIT_POLICY, else spinning
    seed = course_seed(0)                    # COURSE_SEED when set, else the default given

Introduced in notebook 01 (fast mode); `resolve_device` in notebook 02.
"""
from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator

import torch
from torch import nn

__all__ = ["fast_mode", "resolve_device", "eval_mode", "default_threads", "set_threads", "wait_policy", "course_seed",
           "Log", "reporter"]

# Where progress lines go, in every function of the package that reports progress: `print` (their default), any
# function of one string (a list's append, a logger), or None for silence. The one way progress is reported.
Log = Callable[[str], None] | None

_FAST_ENV = "COURSE_FAST"  # COURSE_FAST=1: recipes train briefly (CI, smoke tests) and cache as "<name>-fast"


def fast_mode() -> bool:
    """True when the environment variable COURSE_FAST is 1 (or true/yes): the one reader of the fast mode, called at
    the edge (every notebook's first cell, the command line's main), which passes it on as `fast`. Introduced in
    notebook 01."""
    return os.environ.get(_FAST_ENV, "").strip().lower() in ("1", "true", "yes")


_DEVICE_FIX = "use --device cpu, or auto (CUDA when present)"


def resolve_device(device: str | torch.device = "auto") -> torch.device:
    """"auto" -> CUDA when available, else CPU; "cpu", "cuda", "cuda:N", "mps" are checked to exist here.

    Raises ValueError with a one-line message naming the device and the fix for a name torch does not know
    ("bogus") and for a device this machine or this PyTorch build lacks (CUDA on a CPU-only build, cuda:3 on a
    machine with one GPU). Introduced in notebook 02.
    """
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
    """Put `model` in eval mode (dropout off) inside the `with` block, then restore the mode it had before, also
    when the block raises. Yields the model."""
    was_training = model.training
    model.eval()
    try:
        yield model
    finally:
        model.train(was_training)


_THREADS_ENV = "COURSE_THREADS"  # COURSE_THREADS=N: set_threads() uses N CPU threads
_MAX_DEFAULT_THREADS = 4  # the default never uses more: the course's small matrix products gain little past 4 threads
_TORCH_DEFAULT_THREADS = torch.get_num_threads()  # torch's own choice (one per physical core), before any change


def reporter(log: Log) -> Callable[[str], None]:
    """`log` itself, or a function that drops every line when `log` is None."""
    return log if log is not None else _silent


def _silent(_line: str) -> None:
    pass


def default_threads() -> int:
    """The CPU thread count training uses when nothing is asked for: the threads torch itself would use (one per
    physical core, or OMP_NUM_THREADS), at most _MAX_DEFAULT_THREADS. It depends on the machine and its settings
    alone, never on what else is running, so the same machine always trains with the same count (and the same
    losses)."""
    return max(1, min(_TORCH_DEFAULT_THREADS, _MAX_DEFAULT_THREADS))


def set_threads(threads: int | None = None, log: Callable[[str], None] | None = None) -> int:
    """Set torch's CPU thread count for training and return it: `threads` when given, else COURSE_THREADS, else
    default_threads() (torch's own count, at most _MAX_DEFAULT_THREADS). `log`, when given, gets one line saying
    how many threads and which rule gave the number.

    The count decides the exact losses (a sum split over more threads rounds differently), so it never depends on
    the machine's load. On a machine shared with other work, COURSE_THREADS=1 is often faster (benchmarks/README.md).
    """
    if threads is not None:
        source = "asked for"
    elif os.environ.get(_THREADS_ENV, "").strip():
        threads, source = int(os.environ[_THREADS_ENV]), f"from {_THREADS_ENV}"
    else:
        threads = default_threads()
        source = (f"the default: torch's {_TORCH_DEFAULT_THREADS}, at most {_MAX_DEFAULT_THREADS}; "
                  f"{_THREADS_ENV}=N sets another count")
    threads = max(1, threads)
    torch.set_num_threads(threads)
    if log is not None:
        log(f"CPU threads: {threads} ({source}); waiting threads: {wait_policy()}")
    return threads


def wait_policy() -> str:
    """How this process's idle OpenMP threads wait, as the environment told OpenMP when torch loaded it:
    "passive" (they sleep: OMP_WAIT_POLICY=PASSIVE, the setting for a machine several trainings share; see
    benchmarks/results/contention.md), "active", or OpenMP's default (they spin a while first: fastest alone)."""
    policy = os.environ.get("OMP_WAIT_POLICY", "").strip().lower()
    return policy or "OpenMP's default (spinning)"


_SEED_ENV = "COURSE_SEED"  # COURSE_SEED=N: every model the course trains from here on is seeded with N


def course_seed(default: int = 0) -> int:
    """The seed for a model the course trains: COURSE_SEED when set (another run of the whole course, as the
    learner-run check and the claims' evidence make), else `default` (the recipe's or notebook's own seed).
    Models already cached keep the seed they were trained with: use a fresh COURSE_DATA_DIR with another seed.
    Introduced in notebook 05."""
    value = os.environ.get(_SEED_ENV, "").strip()
    if not value:
        return default
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"{_SEED_ENV}={value[:20]!r} is not a whole number: set it to e.g. 1, or unset it") from None
