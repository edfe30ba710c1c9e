"""The attention family: one interface, six scorers, one masked softmax (notebooks 03 and 04).

    query (B, Hq) or (B, T, Hq), keys (B, S, K), mask (B, S) -> context (B, [T,] K), weights (B, [T,] S)

Weights are exactly zero on padding; (B, T, Hq) scores all T decoder steps at once; modules keep no state.
"""
import math
from typing import NamedTuple

import torch
from torch import Tensor, nn

__all__ = ["ATTENTION_SCORES", "masked_softmax", "AttentionOutput", "Attention", "BahdanauAttention", "check_key_size",
           "DotAttention", "ScaledDotAttention", "GeneralAttention", "ScaledGeneralAttention", "ConcatAttention",
           "make_attention"]

ATTENTION_SCORES = ("bahdanau", "dot", "general", "concat", "scaled_dot", "scaled_general")


def masked_softmax(scores: Tensor, mask: Tensor) -> Tensor:
    """Softmax over the last axis, exactly 0 where mask (B, S) bool is False: scores (B, S) or (B, T, S) -> weights
    alike, rows summing to 1. An all-padding row: ValueError on the CPU, NaN on a GPU. Introduced in notebook 03."""
    if mask.dtype != torch.bool:
        raise ValueError(f"mask must be a bool tensor (True on real tokens), got {mask.dtype}; use src != PAD_ID")
    if mask.dim() != 2 or scores.dim() not in (2, 3) or mask.shape != (scores.shape[0], scores.shape[-1]):
        raise ValueError(f"scores must be (B, S) or (B, T, S) and mask (B, S); got scores {tuple(scores.shape)} and "
                         f"mask {tuple(mask.shape)}: build the mask from the same padded batch as the keys")
    if mask.device.type == "cpu" and not bool(mask.any(dim=-1).all()):  # a host read: free on the CPU only
        raise ValueError("every mask row needs at least one True (a real token); an all-padding row has no "
                         "softmax: drop empty sentences before batching")
    mask = mask.unsqueeze(1) if scores.dim() == 3 else mask  # (B, 1, S): the same source mask for every step
    return torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1)  # (B, [T,] S)


class AttentionOutput(NamedTuple):
    """Result of one attention call. Introduced in notebook 03."""
    context: Tensor  # (B, K) or (B, T, K): weighted sum of the keys
    weights: Tensor  # (B, S) or (B, T, S): rows sum to 1, zero on pads


class Attention(nn.Module):
    """Base class: subclasses implement `score(query (B, T, Hq), keys (B, S, K), projected_keys) -> (B, T, S)`;
    `project_keys(keys)` is per-sentence work done once (Bahdanau's U k; None here), passed back as projected_keys.
    forward(query (B, [T,] Hq), keys, mask (B, S), projected_keys) -> AttentionOutput. Introduced in notebook 03."""

    def project_keys(self, keys: Tensor) -> Tensor | None:
        return None

    def score(self, query: Tensor, keys: Tensor, projected_keys: Tensor | None) -> Tensor:
        raise NotImplementedError

    def forward(self, query: Tensor, keys: Tensor, mask: Tensor,
                projected_keys: Tensor | None = None) -> AttentionOutput:
        if query.dim() not in (2, 3) or keys.dim() != 3 or query.shape[0] != keys.shape[0]:
            raise ValueError(f"query must be (B, Hq) or (B, T, Hq) and keys (B, S, K) with the same B; got query "
                             f"{tuple(query.shape)} and keys {tuple(keys.shape)}: attention is batch-first")
        one_step = query.dim() == 2
        query = query.unsqueeze(1) if one_step else query  # (B, T, Hq), T = 1 for one step
        projected_keys = self.project_keys(keys) if projected_keys is None else projected_keys  # (B, S, A) or None
        scores = self.score(query, keys, projected_keys)  # (B, T, S)
        weights = masked_softmax(scores, mask)  # (B, T, S)
        context = torch.bmm(weights, keys)  # (B, T, K)
        if one_step:
            context, weights = context.squeeze(1), weights.squeeze(1)  # (B, K), (B, S)
        return AttentionOutput(context, weights)


class BahdanauAttention(Attention):
    """Additive attention (Bahdanau et al., 2015): score(q, k) = v^T tanh(W q + U k), no biases; `project_keys`
    computes U k (B, S, A) once per sentence. Sizes: query_size Hq, key_size K, attention_size A. Introduced in
    notebook 03."""

    def __init__(self, query_size: int, key_size: int, attention_size: int):
        super().__init__()
        self.query_layer = nn.Linear(query_size, attention_size, bias=False)  # W
        self.key_layer = nn.Linear(key_size, attention_size, bias=False)  # U
        self.energy_layer = nn.Linear(attention_size, 1, bias=False)  # v

    def project_keys(self, keys: Tensor) -> Tensor:
        return self.key_layer(keys)  # (B, S, A)

    def score(self, query: Tensor, keys: Tensor, projected_keys: Tensor | None) -> Tensor:
        projected_query = self.query_layer(query)  # (B, T, A)
        energies = torch.tanh(projected_query.unsqueeze(2) + projected_keys.unsqueeze(1))  # (B, T, S, A)
        return self.energy_layer(energies).squeeze(-1)  # (B, T, S)


def _needs_equal_sizes(score: str) -> bool:
    return score in ("dot", "scaled_dot")  # no matrix between query and key: q^T k needs Hq == K


def check_key_size(score: str, query_size: int, key_size: int) -> None:
    """Raise a ValueError when scorer `score` cannot compare queries of size Hq with keys of size K."""
    if _needs_equal_sizes(score) and query_size != key_size:
        raise ValueError(f"{score!r} attention needs keys of the decoder's size (query size == key size), got query "
                         f"size {query_size} and key size {key_size}: use 'general' (q^T W k), or keys of the "
                         "decoder's hidden size (bidirectional=False: a bidirectional encoder doubles them)")


class DotAttention(Attention):
    """Luong dot attention: score(q, k) = q^T k. No parameters; needs Hq == K. Introduced in notebook 04."""

    def score(self, query: Tensor, keys: Tensor, projected_keys: Tensor | None) -> Tensor:
        check_key_size("dot", query.shape[-1], keys.shape[-1])
        return torch.bmm(query, keys.transpose(1, 2))  # (B, T, S)


class ScaledDotAttention(Attention):
    """Scaled dot-product attention (Vaswani et al., 2017): score(q, k) = q^T k / sqrt(K). Introduced in notebook 04."""

    def score(self, query: Tensor, keys: Tensor, projected_keys: Tensor | None) -> Tensor:
        check_key_size("scaled_dot", query.shape[-1], keys.shape[-1])
        return torch.bmm(query, keys.transpose(1, 2)) / math.sqrt(keys.shape[-1])  # (B, T, S)


class GeneralAttention(Attention):
    """Luong general: score(q, k) = q^T W k = (W^T q)^T k; `linear.weight` is W^T. Introduced in notebook 04."""

    def __init__(self, query_size: int, key_size: int):
        super().__init__()
        self.linear = nn.Linear(query_size, key_size, bias=False)

    def score(self, query: Tensor, keys: Tensor, projected_keys: Tensor | None) -> Tensor:
        projected_query = self.linear(query)  # (B, T, K)
        return torch.bmm(projected_query, keys.transpose(1, 2))  # (B, T, S)


class ScaledGeneralAttention(GeneralAttention):
    """Scaled general: score(q, k) = q^T W k / sqrt(K) (Luong et al. do not scale). Introduced in notebook 04."""

    def score(self, query: Tensor, keys: Tensor, projected_keys: Tensor | None) -> Tensor:
        return super().score(query, keys, projected_keys) / math.sqrt(keys.size(-1))  # (B, T, S)


class ConcatAttention(Attention):
    """Luong concat: score(q, k) = v^T tanh(W [q; k]), W (A, Hq + K), v (A,). Introduced in notebook 04."""

    def __init__(self, query_size: int, key_size: int, attention_size: int):
        super().__init__()
        self.linear = nn.Linear(query_size + key_size, attention_size, bias=False)  # W
        self.energy_layer = nn.Linear(attention_size, 1, bias=False)  # v

    def score(self, query: Tensor, keys: Tensor, projected_keys: Tensor | None) -> Tensor:
        queries = query.unsqueeze(2).expand(-1, -1, keys.shape[1], -1)  # (B, T, S, Hq)
        keys = keys.unsqueeze(1).expand(-1, query.shape[1], -1, -1)  # (B, T, S, K)
        energies = torch.tanh(self.linear(torch.cat([queries, keys], dim=-1)))  # (B, T, S, A)
        return self.energy_layer(energies).squeeze(-1)  # (B, T, S)


def make_attention(kind: str, query_size: int, key_size: int, attention_size: int | None = None) -> Attention:
    """A scorer by name, one of ATTENTION_SCORES (attention_size A defaults to Hq). Introduced in notebook 04."""
    attention_size = attention_size or query_size
    check_key_size(kind, query_size, key_size)
    makers = {"bahdanau": lambda: BahdanauAttention(query_size, key_size, attention_size), "dot": DotAttention,
              "general": lambda: GeneralAttention(query_size, key_size), "scaled_dot": ScaledDotAttention,
              "concat": lambda: ConcatAttention(query_size, key_size, attention_size),
              "scaled_general": lambda: ScaledGeneralAttention(query_size, key_size)}
    if kind in makers:
        return makers[kind]()
    raise ValueError(f"unknown attention kind {kind!r}: choose one of {', '.join(ATTENTION_SCORES)}")
