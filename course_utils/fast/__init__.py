"""Fast paths for training, pinned by tests to the plain decoders' outputs and gradients, and chosen here:

    loss, nll = training_loss(model, batch, config, graphs)   # what train_step optimises
    graphs = training_graphs(model, config, loader)          # CUDA graphs on a GPU, else None
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Protocol

from torch import Tensor

from course_utils.data import Batch
from course_utils.fast.cuda_graphs import DecoderGraphs
from course_utils.fast.packed_loss import packed_log_probs
from course_utils.fast.recurrences import teacher_forced_steps
from course_utils.loss import masked_nll_loss
from course_utils.seq2seq import teacher_forced_input

if TYPE_CHECKING:
    from course_utils.seq2seq import Translator

__all__ = ["training_loss", "training_graphs"]


class _Config(Protocol):
    """What the fast paths read of a train.TrainConfig."""
    teacher_forcing_ratio: float
    label_smoothing: float
    cuda_graphs: bool


def training_loss(model: Translator, batch: Batch, config: _Config, graphs: DecoderGraphs | None = None,
                  fast_paths: bool = True) -> tuple[Tensor, Tensor]:
    """The training loss of one batch (label-smoothed per config) and the plain NLL per target token (no gradient):
    replayed `graphs`, else a decoder's fast path with the packed loss, else its own forward; the same numbers."""
    if graphs is not None:
        encoded = model.encoder(batch.src, batch.src_lengths)  # keys (B, S, K), final (B, H)
        return graphs(encoded.outputs, batch.src_mask, encoded.final, batch.tgt)
    memory, state = model.encode(batch.src, batch.src_lengths)
    tgt_in, ratio = teacher_forced_input(batch.tgt), config.teacher_forcing_ratio  # (B, T)
    steps = teacher_forced_steps(model.decoder, tgt_in, state, memory, ratio) if fast_paths else None
    if steps is None:
        log_probs, tgt = model.decoder(tgt_in, state, memory, ratio).log_probs, batch.tgt  # (B, T, V), (B, T)
    else:
        log_probs, tgt = packed_log_probs(model.decoder.output_layer, steps, batch.tgt, batch.tgt_lengths)  # (1, N, .)
    loss = masked_nll_loss(log_probs, tgt, label_smoothing=config.label_smoothing)
    return loss, masked_nll_loss(log_probs.detach(), tgt) if config.label_smoothing > 0 else loss.detach()


def training_graphs(model: Translator, config: _Config, loader: Iterable[Batch]) -> DecoderGraphs | None:
    """The CUDA graphs `training_loss` replays, recorded from one pass over `loader`; None on the CPU or when off."""
    if not config.cuda_graphs or model.device.type != "cuda":
        return None
    return DecoderGraphs(model, config.teacher_forcing_ratio, config.label_smoothing, loader)
