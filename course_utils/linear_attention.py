"""Linear attention is an RNN (Katharopoulos et al., 2020): causal dot attention with sim(q, k) = phi(q)^T phi(k),
phi(x) = elu(x) + 1, in place of the softmax, gives output i

    o_i = phi(q_i)^T S_i / (phi(q_i)^T z_i),  S_i = sum_{j <= i} phi(k_j) v_j^T (Dk, Dv),  z_i = sum_{j <= i} phi(k_j)

at once from a (T, T) masked matrix (`causal_linear_attention`), or step by step from a state (S_i, z_i) of fixed
size (`linear_attention_step`). Shapes: q, k (..., T, Dk), v (..., T, Dv), any leading axes. Introduced in notebook 09.
"""
from __future__ import annotations

from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import Tensor

__all__ = ["causal_linear_attention", "initial_state", "linear_attention_step", "recurrent_linear_attention"]


def _elu_feature_map(x: Tensor) -> Tensor:
    return F.elu(x) + 1  # phi(x) > 0 everywhere, so every score phi(q)^T phi(k) is > 0


def causal_linear_attention(query: Tensor, keys: Tensor, values: Tensor, eps: float = 1e-6) -> Tensor:
    """Parallel form: causal phi(Q) phi(K)^T, rows over their sums -> (..., T, Dv). Introduced in notebook 09."""
    scores = (_elu_feature_map(query) @ _elu_feature_map(keys).transpose(-2, -1)).tril()  # (..., T, T): j <= i only
    return (scores @ values) / (scores.sum(dim=-1, keepdim=True) + eps)  # (..., T, Dv)


class _LinearAttentionState(NamedTuple):  # the state after i steps; its size does not depend on i
    sums: Tensor  # S_i (..., Dk, Dv)
    normaliser: Tensor  # z_i (..., Dk)


def initial_state(keys: Tensor, values: Tensor) -> _LinearAttentionState:
    """Zeros S_0 (..., Dk, Dv), z_0 (..., Dk) for keys (..., T, Dk), values (..., T, Dv). Introduced in notebook 09."""
    return _LinearAttentionState(keys.new_zeros(*keys.shape[:-2], keys.shape[-1], values.shape[-1]),
                                 keys.new_zeros(*keys.shape[:-2], keys.shape[-1]))


def linear_attention_step(query: Tensor, key: Tensor, value: Tensor, state: _LinearAttentionState,
                          eps: float = 1e-6) -> tuple[Tensor, _LinearAttentionState]:
    """One position: q, k (..., Dk), v (..., Dv) -> (o (..., Dv), state with k, v added). Introduced in notebook 09."""
    phi_key = _elu_feature_map(key)  # (..., Dk)
    sums = state.sums + phi_key.unsqueeze(-1) * value.unsqueeze(-2)  # (..., Dk, Dv): + phi(k) v^T
    normaliser = state.normaliser + phi_key  # (..., Dk)
    phi_query = _elu_feature_map(query).unsqueeze(-2)  # (..., 1, Dk)
    output = (phi_query @ sums).squeeze(-2) / ((phi_query * normaliser.unsqueeze(-2)).sum(-1) + eps)  # (..., Dv)
    return output, _LinearAttentionState(sums, normaliser)


def recurrent_linear_attention(query: Tensor, keys: Tensor, values: Tensor, eps: float = 1e-6) -> Tensor:
    """`linear_attention_step` over t = 0..T-1, as an RNN runs. Returns (..., T, Dv). Introduced in notebook 09."""
    state, outputs = initial_state(keys, values), []
    for t in range(query.shape[-2]):
        output, state = linear_attention_step(query[..., t, :], keys[..., t, :], values[..., t, :], state, eps)
        outputs.append(output)  # (..., Dv)
    return torch.stack(outputs, dim=-2)  # (..., T, Dv)
