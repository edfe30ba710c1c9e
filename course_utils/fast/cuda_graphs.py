"""CUDA graphs for training on a GPU: the decoder's side of a training step recorded once per batch shape, then
replayed with one launch. The encoder runs as it is (its packed GRU depends on the lengths).
"""
from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterable
from typing import TYPE_CHECKING

import torch
from torch import Tensor, nn

from course_utils.data import Batch
from course_utils.loss import masked_nll_loss
from course_utils.seq2seq import teacher_forced_input

if TYPE_CHECKING:
    from course_utils.seq2seq import Seq2Seq

__all__ = ["quiet_stream_warning", "DecoderGraphs"]


@contextlib.contextmanager
def quiet_stream_warning():
    """Silence autograd's harmless warning that a gradient is made on another CUDA stream than at recording."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="The AccumulateGrad node's stream does not match")
        yield


class _DecoderLoss(nn.Module):
    """The decoder's side of a training step: keys (B, S, K), mask (B, S), encoder_final (B, H), tgt (B, T) ->
    (training loss, plain NLL per target token without gradient); padding included (a graph has fixed shapes)."""

    def __init__(self, decoder: nn.Module, teacher_forcing_ratio: float = 1.0, label_smoothing: float = 0.0):
        super().__init__()
        self.decoder = decoder
        self.teacher_forcing_ratio, self.label_smoothing = teacher_forcing_ratio, label_smoothing

    def forward(self, keys: Tensor, mask: Tensor, encoder_final: Tensor, tgt: Tensor) -> tuple[Tensor, Tensor]:
        memory, state = self.decoder.prepare_memory(keys, mask), self.decoder.init_state(encoder_final)
        log_probs = self.decoder(teacher_forced_input(tgt), state, memory,
                                 self.teacher_forcing_ratio).log_probs  # (B, T, V)
        loss = masked_nll_loss(log_probs, tgt, label_smoothing=self.label_smoothing)
        return loss, masked_nll_loss(log_probs.detach(), tgt) if self.label_smoothing > 0 else loss.detach()


class DecoderGraphs:
    """_DecoderLoss recorded as CUDA graphs, one per (src, tgt) shape of `batches`; called like _DecoderLoss, with
    gradients into the encoder too; other shapes run _DecoderLoss itself. The model must stay on its device."""

    def __init__(self, model: Seq2Seq, teacher_forcing_ratio: float, label_smoothing: float,
                 batches: Iterable[Batch]):
        if model.device.type != "cuda":
            raise ValueError(f"CUDA graphs need the model on a GPU, but it is on {model.device}: train on the CPU "
                             "without them (TrainConfig.cuda_graphs is ignored there)")
        model.train()  # dropout is recorded as it is now
        self.eager = _DecoderLoss(model.decoder, teacher_forcing_ratio, label_smoothing)
        samples = {}
        with torch.no_grad():
            for batch in batches:
                batch = batch.to(model.device)
                shape = (tuple(batch.src.shape), tuple(batch.tgt.shape))
                if shape not in samples:  # a real batch of each shape: real token ids and masks to record with
                    encoded = model.encoder(batch.src, batch.src_lengths)
                    samples[shape] = (encoded.outputs.clone().requires_grad_(), batch.src_mask.clone(),
                                      encoded.final.clone().requires_grad_(), batch.tgt.clone())
        modules = tuple(_DecoderLoss(model.decoder, teacher_forcing_ratio, label_smoothing) for _ in samples)
        with quiet_stream_warning():
            graphed = torch.cuda.make_graphed_callables(  # unused inputs: the keys, for a decoder without attention
                modules, tuple(samples.values()), allow_unused_input=True) if modules else ()
        self.graphs = dict(zip(samples, graphed))

    def __call__(self, keys: Tensor, mask: Tensor, encoder_final: Tensor, tgt: Tensor) -> tuple[Tensor, Tensor]:
        module = self.graphs.get((tuple(mask.shape), tuple(tgt.shape)), self.eager)
        return module(keys, mask, encoder_final, tgt)
