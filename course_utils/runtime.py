"""Where and how the code runs: the device, the fast mode of CI, and evaluation mode.

    device = resolve_device("auto")          # CUDA when present, else the CPU
    if fast_mode(): ...                      # COURSE_FAST=1: train briefly (CI, smoke tests)
    with eval_mode(model): ...               # dropout off inside, the model's previous mode restored after

Introduced in notebook 01 (fast mode); `resolve_device` in notebook 02.
"""
from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

import torch
from torch import nn

FAST_ENV = "COURSE_FAST"  # COURSE_FAST=1: recipes train briefly (CI, smoke tests) and cache as "<name>-fast"


def fast_mode() -> bool:
    """True when the environment variable COURSE_FAST is 1 (or true/yes): the one reader of the fast mode, used by
    the package and by every notebook's first cell. Introduced in notebook 01."""
    return os.environ.get(FAST_ENV, "").strip().lower() in ("1", "true", "yes")


def resolve_device(device: str | torch.device = "auto") -> torch.device:
    """"auto" -> CUDA when available, else CPU; anything else is passed to torch.device. Introduced in notebook 02."""
    if str(device) == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)


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
