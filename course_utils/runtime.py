"""Where and how the code runs: the device, the fast mode of CI, and evaluation mode.

    device = resolve_device("auto")          # CUDA when present, else the CPU
    if fast_mode(): ...                      # COURSE_FAST=1: train briefly (CI, smoke tests)
    with eval_mode(model): ...               # dropout off inside, the model's previous mode restored after
    set_threads()                            # CPU threads for training: COURSE_THREADS, else the idle cores

Introduced in notebook 01 (fast mode); `resolve_device` in notebook 02.
"""
from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator

import torch
from torch import nn

FAST_ENV = "COURSE_FAST"  # COURSE_FAST=1: recipes train briefly (CI, smoke tests) and cache as "<name>-fast"


def fast_mode() -> bool:
    """True when the environment variable COURSE_FAST is 1 (or true/yes): the one reader of the fast mode, used by
    the package and by every notebook's first cell. Introduced in notebook 01."""
    return os.environ.get(FAST_ENV, "").strip().lower() in ("1", "true", "yes")


DEVICE_FIX = "use --device cpu, or auto (CUDA when present)"


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
                         f"{DEVICE_FIX}") from error
    if resolved.type == "cuda":
        if not torch.cuda.is_available():
            why = "this PyTorch build has no CUDA" if torch.version.cuda is None else "no CUDA GPU is visible"
            raise ValueError(f"device {str(device)!r} asked for, but {why}; {DEVICE_FIX}")
        if resolved.index is not None and resolved.index >= torch.cuda.device_count():
            raise ValueError(f"device {str(device)!r} asked for, but this machine has "
                             f"{torch.cuda.device_count()} CUDA GPU(s) (cuda:0..); {DEVICE_FIX}")
    elif resolved.type == "mps" and not (hasattr(torch.backends, "mps") and torch.backends.mps.is_available()):
        raise ValueError(f"device {str(device)!r} asked for, but Apple's MPS is not available here; {DEVICE_FIX}")
    elif resolved.type not in ("cpu", "cuda", "mps"):
        raise ValueError(f"device {str(device)!r} cannot run the course's models; {DEVICE_FIX}")
    return resolved


@contextlib.contextmanager
def eval_mode(model: nn.Module) -> Iterator[nn.Module]:
    """Put `model` in eval mode (dropout off) inside the `with` block, then restore the mode it had before, also
    when the block raises. Yields the model. Introduced in notebook 05."""
    was_training = model.training
    model.eval()
    try:
        yield model
    finally:
        model.train(was_training)


THREADS_ENV = "COURSE_THREADS"  # COURSE_THREADS=N: set_threads() uses N CPU threads
_TORCH_DEFAULT_THREADS = torch.get_num_threads()  # torch's own choice (one per physical core), before any change


def set_threads(threads: int | None = None, log: Callable[[str], None] | None = None) -> int:
    """Set torch's CPU thread count for training and return it: `threads` when given, else COURSE_THREADS, else
    the cores idle now (cores minus the 1-minute load average, rounded; at least 1, at most torch's default).
    `log`, when given, gets one line saying how many threads and where the number came from.

    Why: the course's models run many small operations per decoder step, and each multi-threaded one waits for
    all its threads. When other programs keep the cores busy, a thread often waits for a core, and two threads ran
    5-10x slower than one on a busy 2-core machine (benchmarks/README.md); on an idle machine torch's default (one
    thread per core) is kept.

    Used by the package, not a notebook.
    """
    source = "asked for"
    if threads is None and os.environ.get(THREADS_ENV, "").strip():
        threads, source = int(os.environ[THREADS_ENV]), f"from {THREADS_ENV}"
    if threads is None:
        source = f"the idle cores; {THREADS_ENV}=N fixes the count, and with it the exact losses"
        try:
            load = os.getloadavg()[0]  # processes running or waiting for a core, averaged over the last minute
        except (AttributeError, OSError):  # not available on Windows
            load = 0.0
        threads = min(_TORCH_DEFAULT_THREADS, round((os.cpu_count() or 1) - load))
    threads = max(1, threads)
    torch.set_num_threads(threads)
    if log is not None:
        log(f"CPU threads: {threads} ({source})")
    return threads
