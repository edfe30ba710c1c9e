"""The training objective: the negative log-likelihood of the real target tokens (optionally label-smoothed), and
its perplexity. Introduced in notebook 05."""
from __future__ import annotations

import math

import torch.nn.functional as F
from torch import Tensor

from course_utils.vocab import PAD_ID

__all__ = ["masked_nll_loss", "smoothed_targets", "perplexity"]


def masked_nll_loss(log_probs: Tensor, tgt: Tensor, reduction: str = "mean", label_smoothing: float = 0.0) -> Tensor:
    """NLL of the target tokens, PAD positions ignored: log_probs (B, T, V), tgt (B, T) -> scalar, per real token
    ("mean") or summed ("sum"). label_smoothing eps: 1 - eps on the gold word, eps spread uniformly over the
    vocabulary (`smoothed_targets`). Introduced in notebook 05."""
    if log_probs.dim() != 3 or tgt.shape != log_probs.shape[:2]:
        raise ValueError(f"log_probs must be (B, T, V) and tgt (B, T) with the same B and T, got "
                         f"{tuple(log_probs.shape)} and {tuple(tgt.shape)}; pass the decoder's log_probs and batch.tgt")
    flat_log_probs = log_probs.reshape(-1, log_probs.size(-1))  # (B*T, V)
    flat_tgt = tgt.reshape(-1)  # (B*T,)
    nll = F.nll_loss(flat_log_probs, flat_tgt, ignore_index=PAD_ID, reduction=reduction)
    if label_smoothing == 0:
        return nll
    # the eps part: -mean over the vocabulary of log p at real positions (F.cross_entropy's, without a 2nd log_softmax)
    real = flat_tgt != PAD_ID  # (B*T,)
    uniform = -(flat_log_probs.mean(dim=-1) * real).sum()  # scalar
    if reduction == "mean":
        uniform = uniform / real.sum()
    return (1 - label_smoothing) * nll + label_smoothing * uniform


def smoothed_targets(tgt: Tensor, vocab_size: int, label_smoothing: float) -> Tensor:
    """The label-smoothed target distribution: tgt (B, T) -> q (B, T, V), q(v) = (1 - eps) [v == gold] + eps / V, rows
    0 at PAD positions. -(q * log_probs).sum() / real tokens is masked_nll_loss(..., label_smoothing=eps).
    Raises ValueError unless 0 <= eps < 1. Introduced in appendix A4."""
    if not 0.0 <= label_smoothing < 1.0:
        raise ValueError(f"label_smoothing must lie in [0, 1), got {label_smoothing}; the recipes use 0.1 or 0.2")
    one_hot = F.one_hot(tgt, vocab_size).float()  # (B, T, V)
    q = (1 - label_smoothing) * one_hot + label_smoothing / vocab_size  # (B, T, V)
    return q * (tgt != PAD_ID).unsqueeze(-1)  # (B, T, V) zero rows at the pads


def perplexity(mean_nll: float) -> float:
    """exp(mean NLL per token), capped at exp(50) so an untrained model does not overflow. Introduced in notebook 05."""
    return math.exp(min(mean_nll, 50.0))
