"""Teacher-forced fast paths of the Bahdanau and Luong decoders: the numbers of their step loops, with less work,
as every input word is known up front. The output layer is left to the caller (`Steps.features`).
"""
from __future__ import annotations

from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from course_utils.attention import masked_softmax
from course_utils.decoder import BahdanauDecoder, Decoder, DecoderOutput, DecoderState, LuongDecoder, Memory

__all__ = ["Steps", "teacher_forced_steps", "FastDecoder"]


class Steps(NamedTuple):
    """A teacher-forced pass up to the output layer: decoder.output_layer(*features) gives (B, T, V)."""
    features: tuple[Tensor, ...]  # each (B, T, .)
    weights: Tensor  # (B, T, S)
    state: DecoderState  # after the last step


def _padding_bias(mask: Tensor) -> Tensor:
    """mask (B, S) bool -> (B, S), 0 or -inf: added to scores, masked_softmax's weights with the mask checked once."""
    bias = torch.zeros(mask.shape, device=mask.device).masked_fill(~mask, float("-inf"))  # (B, S)
    masked_softmax(bias, mask)  # masked_softmax's checks, once
    return bias


def _bahdanau_steps(decoder: BahdanauDecoder, tgt_in: Tensor, state: DecoderState, memory: Memory) -> Steps:
    """BahdanauDecoder.forward's recurrence: the words' half of the GRU input product once, W s and W_h s as one
    product, the GRU written out on its weights."""
    embedded = decoder.dropout(decoder.embedding(tgt_in))  # (B, T, E)
    gru, attention, size, hidden = decoder.gru, decoder.attention, decoder.hidden_size, state.hidden
    w_words, w_context = gru.weight_ih_l0.split([embedded.shape[-1], decoder.key_size], dim=1)  # (3H, E), (3H, K)
    from_words = F.linear(embedded, w_words, gru.bias_ih_l0).unbind(dim=1)  # T x (B, 3H): one matrix product
    w_state = torch.cat([gru.weight_hh_l0, attention.query_layer.weight])  # (3H + A, H): both read s_{i-1}
    parts = [2 * size, size, w_state.shape[0] - 3 * size]  # reset and update gates, new gate, query (A)
    b_state = F.pad(gru.bias_hh_l0, (0, parts[2]))  # (3H + A,) no bias on the query
    padding, steps = _padding_bias(memory.mask), []  # (B, S) 0 or -inf
    for words in from_words:  # (B, 3H) W_ie E y_{i-1} + b_i; split, not slices (a slice's backward zero-fills)
        h_rz, h_n, query = F.linear(hidden, w_state, b_state).split(parts, dim=1)  # (B, 2H), (B, H), (B, A)
        energies = torch.tanh(query.unsqueeze(1) + memory.projected_keys)  # (B, S, A)
        weights = torch.softmax(attention.energy_layer(energies).squeeze(-1) + padding, dim=-1)  # (B, S)
        context = torch.bmm(weights.unsqueeze(1), memory.keys).squeeze(1)  # (B, K)
        i_rz, i_n = torch.addmm(words, context, w_context.t()).split(parts[:2], dim=1)  # W_i [E y; c] + b_i
        reset, update = torch.sigmoid(i_rz + h_rz).chunk(2, dim=1)  # (B, H) each
        new = torch.tanh(i_n + reset * h_n)  # (B, H)
        hidden = new + update * (hidden - new)  # (B, H) = (1 - z) n + z s_{i-1}
        steps.append((hidden, context, weights))
    hiddens, contexts, weights = (torch.stack(outputs, dim=1) for outputs in zip(*steps))  # (B, T, H|K|S)
    return Steps((hiddens, contexts, embedded), weights, DecoderState(hidden, None))


def _luong_steps(decoder: LuongDecoder, tgt_in: Tensor, state: DecoderState, memory: Memory) -> Steps:
    """All T steps of a Luong decoder without input feeding: one GRU call, one attention call."""
    embedded = decoder.dropout(decoder.embedding(tgt_in))  # (B, T, E)
    outputs, hidden = decoder.gru(embedded, state.hidden.unsqueeze(0))  # (B, T, H), (1, B, H)
    context, weights = decoder.attention(outputs, memory.keys, memory.mask, memory.projected_keys)  # all steps
    attentional = decoder.attentional_state(context, outputs)  # (B, T, H)
    return Steps((attentional,), weights, DecoderState(hidden.squeeze(0), None))  # weights (B, T, S)


def teacher_forced_steps(decoder: nn.Module, tgt_in: Tensor, state, memory,
                         teacher_forcing_ratio: float = 1.0) -> Steps | None:
    """tgt_in (B, T) -> Steps by the decoder's fast path, with teacher forcing 1.0; None where there is none."""
    if teacher_forcing_ratio != 1.0:
        return None
    if isinstance(decoder, BahdanauDecoder):
        return _bahdanau_steps(decoder, tgt_in, state, memory)
    if isinstance(decoder, LuongDecoder) and not decoder.input_feeding:
        return _luong_steps(decoder, tgt_in, state, memory)
    return None


def _fast_forward(decoder: nn.Module, tgt_in: Tensor, state, memory,
                 teacher_forcing_ratio: float = 1.0) -> DecoderOutput:
    """decoder(tgt_in, state, memory, ratio) through its fast path when it has one: the same DecoderOutput."""
    steps = teacher_forced_steps(decoder, tgt_in, state, memory, teacher_forcing_ratio)
    if steps is None:
        return decoder(tgt_in, state, memory, teacher_forcing_ratio)
    return DecoderOutput(decoder.output_layer(*steps.features), steps.weights, steps.state)  # (B, T, V)


class FastDecoder(nn.Module):
    """A decoder's fast path as a module, with the decoder's submodules under their names (a shape trace reads
    alike). Introduced in appendix A2."""

    def __init__(self, decoder: Decoder):
        super().__init__()
        for name, module in decoder.named_children():
            self.add_module(name, module)
        self.decoders = (decoder,)  # a tuple: not registered a second time as a submodule

    def forward(self, tgt_in: Tensor, state, memory, teacher_forcing_ratio: float = 1.0) -> DecoderOutput:
        return _fast_forward(self.decoders[0], tgt_in, state, memory, teacher_forcing_ratio)
