"""Notebook 06's checkers: the typical mistakes get their hint, and the cases are tricky enough."""
from __future__ import annotations

import torch

from course_utils import exercises
from course_utils.exercises import nb06_heatmaps, solutions


def deviation_variant(weights: torch.Tensor, centre: float = 0.5, relative: bool = True, reduce: str = "mean"):
    """The diagonal deviation; the keyword arguments switch on the usual mistakes."""
    T, S = weights.shape
    p = (torch.arange(T) + centre) / (T if relative else 1)  # (T,)
    q = (torch.arange(S) + centre) / (S if relative else 1)  # (S,)
    per_step = (weights * (q[None, :] - p[:, None]).abs()).sum(-1)  # (T, S) -> (T,)
    return float(getattr(per_step, reduce)())


entropy = solutions.attention_entropy
MISTAKES = [  # checker, typical wrong solution, a word of the expected hint
    (exercises.check_attention_entropy, lambda weights: -(weights * weights.log()).sum(-1),
     "0 \\* log\\(0\\)"),  # nan on exact zeros
    (exercises.check_attention_entropy, lambda weights: torch.special.xlogy(weights, weights).sum(-1), "MINUS"),
    (exercises.check_attention_entropy, lambda weights: entropy(weights) / torch.tensor(2.0).log(), "bits"),  # log2
    (exercises.check_attention_entropy, lambda weights: -torch.special.xlogy(weights, weights).sum(0),
     "shape"),  # over the output axis
    (exercises.check_attention_entropy, lambda weights: -torch.special.xlogy(weights, weights).sum(), "shape"),
    (exercises.check_argmax_alignment, lambda weights, tokens: [tokens[j] for j in weights.argmax(dim=0).tolist()],
     "one answer per output"),
    (exercises.check_argmax_alignment, lambda weights, tokens: weights.argmax(dim=-1), "TOKENS"),  # indices
    (exercises.check_argmax_alignment, lambda weights, tokens: [tokens[j] for j in weights.argmin(dim=-1).tolist()],
     "largest|argmax"),
    (exercises.check_argmax_alignment, lambda weights, tokens: [tokens[j] for j in weights.argmax(dim=-1) + 9],
     "raised IndexError"),
    (exercises.check_diagonal_deviation, lambda weights: deviation_variant(weights, centre=0.0), "cell edges"),
    (exercises.check_diagonal_deviation, lambda weights: deviation_variant(weights, relative=False), "indices"),
    (exercises.check_diagonal_deviation, lambda weights: deviation_variant(weights, reduce="sum"),
     "summed over the output steps"),
    (exercises.check_diagonal_deviation, lambda weights: [deviation_variant(weights)], "one number"),
    (exercises.check_diagonal_deviation, lambda weights: deviation_variant(weights.T), "expected"),  # transposed
]


def test_notebook_06_cases_have_unequal_lengths_exact_zeros_and_a_one_hot_row():
    maps = nb06_heatmaps._attention_maps()
    assert {(w.shape[0] < w.shape[1], w.shape[0] > w.shape[1]) for w in maps} >= {(True, False), (False, True)}
    assert any((w == 0).any() for w in maps) and any((w == 1).any() for w in maps)
    assert all(torch.allclose(w.sum(-1), torch.ones(w.shape[0])) for w in maps)  # real attention maps
    # the edge-not-centre mistake only shows when T != S: the cases must contain such a map
    assert any(w.shape[0] != w.shape[1] for w in nb06_heatmaps._attention_maps(seed=9))
