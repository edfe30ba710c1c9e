"""The training loss over the real target steps only: the output layer and the loss never touch the padding."""
from __future__ import annotations

from collections.abc import Callable

from torch import Tensor

from course_utils.data import lengths_to_mask
from course_utils.fast.recurrences import Steps

__all__ = ["packed_log_probs"]


def packed_log_probs(output_layer: Callable[..., Tensor], steps: Steps, tgt: Tensor,
                     lengths: Tensor) -> tuple[Tensor, Tensor]:
    """output_layer(*steps.features) at the N real steps of tgt (B, T) (lengths (B,)), row by row -> log-probs
    (1, N, V) and their targets (1, N): the shapes masked_nll_loss reads."""
    batch, width = tgt.shape
    real = lengths_to_mask(lengths.cpu(), width).flatten()  # (B * T,) on the CPU
    index = real.nonzero().squeeze(1).to(tgt.device)  # (N,) flat positions of the real steps
    rows = [x.reshape(batch * width, -1).index_select(0, index) for x in steps.features]  # each (N, .)
    return output_layer(*rows).unsqueeze(0), tgt.flatten().index_select(0, index).unsqueeze(0)  # (1, N, V), (1, N)
