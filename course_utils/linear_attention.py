"""Linear attention is an RNN (Katharopoulos et al., 2020, "Transformers are RNNs").

Drop the softmax of causal dot attention and score with a positive feature map instead, sim(q, k) = phi(q)^T phi(k)
with phi(x) = elu(x) + 1. Then output i is

    o_i = phi(q_i)^T S_i / (phi(q_i)^T z_i),  S_i = sum_{j <= i} phi(k_j) v_j^T (Dk, Dv),  z_i = sum_{j <= i} phi(k_j)

and (S_i, z_i) is a recurrent state: S_i = S_{i-1} + phi(k_i) v_i^T, z_i = z_{i-1} + phi(k_i). The same numbers come
from a (T, T) masked matrix at once (training, `causal_linear_attention`) or one step at a time with a state of
fixed size (decoding, `linear_attention_step`): the memory no longer grows with the prefix, as a GRU's does not.

Shapes: q, k (..., T, Dk), v (..., T, Dv); the leading axes (batch, heads) are any. Introduced in notebook 09.
"""
from __future__ import annotations

from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import Tensor

__all__ = ["causal_linear_attention", "initial_state",
           "linear_attention_step", "recurrent_linear_attention"]


def _elu_feature_map(x: Tensor) -> Tensor:
    """phi(x) = elu(x) + 1: positive everywhere, so every score phi(q)^T phi(k) is > 0 (any shape in and out)."""
    return F.elu(x) + 1


def causal_linear_attention(query: Tensor, keys: Tensor, values: Tensor, eps: float = 1e-6) -> Tensor:
    """The parallel form: scores phi(Q) phi(K)^T (..., T, T) kept on and below the diagonal, each row divided by
    its sum (the softmax's normalisation without the exp). Returns (..., T, Dv). Introduced in notebook 09."""
    scores = _elu_feature_map(query) @ _elu_feature_map(keys).transpose(-2, -1)  # (..., T, T)
    steps = scores.shape[-1]
    scores = scores * torch.ones(steps, steps, device=scores.device).tril()  # position i sees j <= i
    return (scores @ values) / (scores.sum(dim=-1, keepdim=True) + eps)  # (..., T, Dv)


class _LinearAttentionState(NamedTuple):
    """The recurrent state after i steps: S_i (..., Dk, Dv) and z_i (..., Dk). Its size does not depend on i."""

    sums: Tensor
    normaliser: Tensor


def initial_state(keys: Tensor, values: Tensor) -> _LinearAttentionState:
    """Zeros shaped for keys (..., T, Dk) and values (..., T, Dv): S_0 (..., Dk, Dv), z_0 (..., Dk).
    Introduced in notebook 09."""
    leading = keys.shape[:-2]
    return _LinearAttentionState(keys.new_zeros(*leading, keys.shape[-1], values.shape[-1]),
                                keys.new_zeros(*leading, keys.shape[-1]))


def linear_attention_step(query: Tensor, key: Tensor, value: Tensor, state: _LinearAttentionState,
                          eps: float = 1e-6) -> tuple[Tensor, _LinearAttentionState]:
    """One position: q, k (..., Dk), v (..., Dv), state (S, z) -> (o (..., Dv), the state with k, v added).
    Introduced in notebook 09."""
    phi_key = _elu_feature_map(key)  # (..., Dk)
    sums = state.sums + phi_key.unsqueeze(-1) * value.unsqueeze(-2)  # (..., Dk, Dv): + phi(k) v^T
    normaliser = state.normaliser + phi_key  # (..., Dk)
    phi_query = _elu_feature_map(query).unsqueeze(-2)  # (..., 1, Dk)
    output = (phi_query @ sums).squeeze(-2) / ((phi_query * normaliser.unsqueeze(-2)).sum(-1) + eps)  # (..., Dv)
    return output, _LinearAttentionState(sums, normaliser)


def recurrent_linear_attention(query: Tensor, keys: Tensor, values: Tensor, eps: float = 1e-6) -> Tensor:
    """The recurrent form: `linear_attention_step` over t = 0..T-1, as an RNN runs. Returns (..., T, Dv).
    Introduced in notebook 09."""
    state = initial_state(keys, values)
    outputs = []
    for t in range(query.shape[-2]):
        output, state = linear_attention_step(query[..., t, :], keys[..., t, :], values[..., t, :], state, eps)
        outputs.append(output)  # (..., Dv)
    return torch.stack(outputs, dim=-2)  # (..., T, Dv)
