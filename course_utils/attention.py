"""The attention family: one interface, five scorers, one masked softmax.

Introduced in notebooks 03 (Bahdanau) and 04 (Luong's dot, general and concat; scaled dot as the bridge to
Transformers). Every scorer maps a query and the encoder's keys to scores, `masked_softmax` turns scores into
weights that are exactly zero on padding, and the context is the weighted sum of the keys:

    query (B, Hq) or (B, T, Hq), keys (B, S, K), mask (B, S) -> context (B, [T,] K), weights (B, [T,] S)

The (B, T, Hq) form scores all T decoder steps at once (Luong's fast path for teacher-forced training).
Modules return their weights and never keep them as state, so one module serves any batch, beam or device.
"""
import math
from typing import NamedTuple

import torch
from torch import Tensor, nn

__all__ = ["ATTENTION_SCORES", "masked_softmax", "AttentionOutput", "Attention", "BahdanauAttention",
           "check_key_size", "DotAttention", "ScaledDotAttention", "GeneralAttention",
           "ScaledGeneralAttention", "ConcatAttention", "make_attention"]

ATTENTION_SCORES = ("bahdanau", "dot", "general", "concat", "scaled_dot", "scaled_general")


def masked_softmax(scores: Tensor, mask: Tensor) -> Tensor:
    """Softmax over the last axis that gives padded positions exactly zero weight: scores (B, S) or (B, T, S), mask
    (B, S) bool (True on real tokens) -> weights shaped like scores, rows summing to 1, exactly 0 where mask is False.

    An all-padding mask row raises a ValueError on the CPU; on a GPU it gives NaN weights instead (the check would
    read a value back to the host at every decoder step). Introduced in notebook 03.
    """
    if mask.dtype != torch.bool:
        raise ValueError(f"mask must be a bool tensor (True on real tokens), got {mask.dtype}; use src != PAD_ID")
    if mask.dim() != 2 or scores.dim() not in (2, 3) or mask.shape != (scores.shape[0], scores.shape[-1]):
        raise ValueError(f"scores must be (B, S) or (B, T, S) and mask (B, S); got scores {tuple(scores.shape)} and "
                         f"mask {tuple(mask.shape)}: build the mask from the same padded batch as the keys")
    if mask.device.type == "cpu" and not bool(mask.any(dim=-1).all()):  # a host read: free on the CPU only
        raise ValueError("every mask row needs at least one True (a real token); an all-padding row has no "
                         "softmax: drop empty sentences before batching")
    if scores.dim() == 3:
        mask = mask.unsqueeze(1)  # (B, 1, S): the same source mask for every decoder step
    return torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1)  # (B, [T,] S)


class AttentionOutput(NamedTuple):
    """Result of one attention call. Introduced in notebook 03."""

    context: Tensor  # (B, K) or (B, T, K): weighted sum of the keys
    weights: Tensor  # (B, S) or (B, T, S): rows sum to 1, zero on pads


class Attention(nn.Module):
    """Base class: subclasses implement `score(query (B, T, Hq), keys (B, S, K), projected_keys) -> (B, T, S)`.

    forward(query (B, Hq) or (B, T, Hq), keys (B, S, K), mask (B, S) bool, projected_keys=None) -> AttentionOutput.
    `project_keys(keys)` is the per-sentence work a scorer can do once, before the decoder's steps (Bahdanau's
    U k); the base class has none and returns None. Pass its result as `projected_keys` to skip recomputing it.
    Introduced in notebook 03.
    """

    def project_keys(self, keys: Tensor) -> Tensor | None:
        """Per-sentence precomputation on keys (B, S, K); None when the scorer has none."""
        return None

    def score(self, query: Tensor, keys: Tensor, projected_keys: Tensor | None) -> Tensor:
        raise NotImplementedError

    def forward(self, query: Tensor, keys: Tensor, mask: Tensor,
                projected_keys: Tensor | None = None) -> AttentionOutput:
        if query.dim() not in (2, 3) or keys.dim() != 3 or query.shape[0] != keys.shape[0]:
            raise ValueError(f"query must be (B, Hq) or (B, T, Hq) and keys (B, S, K) with the same B; got query "
                             f"{tuple(query.shape)} and keys {tuple(keys.shape)}: attention is batch-first")
        one_step = query.dim() == 2
        if one_step:
            query = query.unsqueeze(1)  # (B, 1, Hq)
        if projected_keys is None:
            projected_keys = self.project_keys(keys)  # (B, S, A) or None
        scores = self.score(query, keys, projected_keys)  # (B, T, S)
        weights = masked_softmax(scores, mask)  # (B, T, S)
        context = torch.bmm(weights, keys)  # (B, T, K)
        if one_step:
            context, weights = context.squeeze(1), weights.squeeze(1)  # (B, K), (B, S)
        return AttentionOutput(context, weights)


class BahdanauAttention(Attention):
    """Additive attention (Bahdanau et al., 2015): score(q, k) = v^T tanh(W q + U k).

    U k does not depend on the decoder step, so `project_keys` computes it once per sentence (B, S, A); the decoder
    keeps it in its Memory. No biases, as in the paper. Sizes: query_size Hq, key_size K, attention_size A.
    Introduced in notebook 03.
    """

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
    """True for the scorers with no matrix between query and key ("dot", "scaled_dot"): q^T k needs Hq == K."""
    return score in ("dot", "scaled_dot")


def check_key_size(score: str, query_size: int, key_size: int) -> None:
    """The rule "dot needs keys of the decoder's size", stated once: a one-line ValueError when scorer `score`
    cannot compare queries of `query_size` (Hq) with keys of `key_size` (K: H, or 2H from a bidirectional encoder).
    """
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
    """Scaled dot-product attention (Vaswani et al., 2017): score(q, k) = q^T k / sqrt(K); with one head and keys as
    values, torch.nn.functional.scaled_dot_product_attention. Introduced in notebook 04."""

    def score(self, query: Tensor, keys: Tensor, projected_keys: Tensor | None) -> Tensor:
        check_key_size("scaled_dot", query.shape[-1], keys.shape[-1])
        return torch.bmm(query, keys.transpose(1, 2)) / math.sqrt(keys.shape[-1])  # (B, T, S)


class GeneralAttention(Attention):
    """Luong general attention: score(q, k) = q^T W k, W (Hq, K) (`linear.weight` is W^T), computed as (W^T q)^T k.
    Introduced in notebook 04."""

    def __init__(self, query_size: int, key_size: int):
        super().__init__()
        self.linear = nn.Linear(query_size, key_size, bias=False)

    def score(self, query: Tensor, keys: Tensor, projected_keys: Tensor | None) -> Tensor:
        projected_query = self.linear(query)  # (B, T, K)
        return torch.bmm(projected_query, keys.transpose(1, 2))  # (B, T, S)


class ScaledGeneralAttention(GeneralAttention):
    """General attention divided by sqrt(K): score(q, k) = q^T W k / sqrt(K), as scaled dot divides dot. Luong et al.
    (2015) do not scale it; unscaled, the softmax saturates early on some seeds and never recovers (notebook 04).
    Introduced in notebook 04.
    """

    def score(self, query: Tensor, keys: Tensor, projected_keys: Tensor | None) -> Tensor:
        return super().score(query, keys, projected_keys) / math.sqrt(keys.size(-1))  # (B, T, S)


class ConcatAttention(Attention):
    """Luong concat attention: score(q, k) = v^T tanh(W [q; k]), a true concatenation of query and key (W [q; k] =
    W_q q + W_k k is Bahdanau's form; the code reads like the paper). A widely read article computes tanh(W (q + k))
    instead, with v uninitialised; here v is an nn.Linear. Sizes: query_size Hq, key_size K, attention_size A.
    Introduced in notebook 04.
    """

    def __init__(self, query_size: int, key_size: int, attention_size: int):
        super().__init__()
        self.linear = nn.Linear(query_size + key_size, attention_size, bias=False)  # W
        self.energy_layer = nn.Linear(attention_size, 1, bias=False)  # v

    def score(self, query: Tensor, keys: Tensor, projected_keys: Tensor | None) -> Tensor:
        steps, source_length = query.shape[1], keys.shape[1]
        queries = query.unsqueeze(2).expand(-1, -1, source_length, -1)  # (B, T, S, Hq)
        keys = keys.unsqueeze(1).expand(-1, steps, -1, -1)  # (B, T, S, K)
        energies = torch.tanh(self.linear(torch.cat([queries, keys], dim=-1)))  # (B, T, S, A)
        return self.energy_layer(energies).squeeze(-1)  # (B, T, S)


def make_attention(kind: str, query_size: int, key_size: int, attention_size: int | None = None) -> Attention:
    """A scorer by name, one of ATTENTION_SCORES: query_size Hq (the decoder's H), key_size K, attention_size A for
    the additive scorers (default Hq). Introduced in notebook 04.
    """
    attention_size = attention_size or query_size
    check_key_size(kind, query_size, key_size)
    if kind == "bahdanau":
        return BahdanauAttention(query_size, key_size, attention_size)
    if kind == "dot":
        return DotAttention()
    if kind == "general":
        return GeneralAttention(query_size, key_size)
    if kind == "concat":
        return ConcatAttention(query_size, key_size, attention_size)
    if kind == "scaled_dot":
        return ScaledDotAttention()
    if kind == "scaled_general":
        return ScaledGeneralAttention(query_size, key_size)
    raise ValueError(f"unknown attention kind {kind!r}: choose one of {', '.join(ATTENTION_SCORES)}")
