"""Notebook 03's checkers: the typical mistakes get their hint, and the cases are tricky enough."""
from __future__ import annotations

import pytest
import torch

from course_utils import exercises
from course_utils.exercises import nb03_attention_decoder, solutions


def stable_softmax(scores: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """A softmax written out (the masked-softmax exercise forbids torch.softmax), to build the mistakes with."""
    exps = (scores - scores.amax(dim, keepdim=True)).exp()  # the same shape as scores
    return exps / exps.sum(dim, keepdim=True)


def naive_softmax(scores, mask):  # exp without subtracting the max: overflows for large scores
    exps = scores.exp() * mask  # (B, S)
    return exps / exps.sum(-1, keepdim=True)


def dot_with(weights_fn):
    """A dot attention whose weights come from weights_fn(scores, mask, keys), context done right."""
    def attend(query, keys, mask):
        weights = weights_fn(torch.einsum("bk,bsk->bs", query, keys), mask, keys)  # (B, S)
        return torch.einsum("bs,bsk->bk", weights, keys), weights  # (B, K), (B, S)
    return attend


MISTAKES = [  # checker, typical wrong solution, a word of the expected hint
    (exercises.check_masked_softmax, lambda scores, mask: stable_softmax(scores), "exactly 0"),  # no mask at all
    (exercises.check_masked_softmax, lambda scores, mask: stable_softmax(scores.masked_fill(~mask, 0)),
     "exactly 0"),  # 0 is not -inf
    (exercises.check_masked_softmax, lambda scores, mask: stable_softmax(scores) * mask,
     "sum to less than 1"),  # mask after the softmax
    (exercises.check_masked_softmax, lambda scores, mask: stable_softmax(scores.masked_fill(~mask, float("-inf")), 0),
     "dim=-1"),  # over the batch
    (exercises.check_masked_softmax, naive_softmax, "overflows"),
    # rows that sum to 1 with pads exactly 0, but the wrong values: only the value comparison catches these
    (exercises.check_masked_softmax, lambda scores, mask: mask.float() / mask.sum(-1, keepdim=True),
     "weights differ"),  # uniform over the real positions: the scores ignored
    (exercises.check_masked_softmax, lambda scores, mask: stable_softmax(2 * scores.masked_fill(~mask, float("-inf"))),
     "weights differ"),  # a temperature of 1/2
    (exercises.check_dot_attention, dot_with(lambda scores, mask, keys: solutions.masked_softmax(-scores, mask)),
     "weights differ"),  # the score's sign flipped: attends to the least similar key
    (exercises.check_masked_softmax, lambda scores, mask: naive_softmax(scores, mask)[:, None], "shape"),  # (B, 1, S)
    (exercises.check_dot_attention, dot_with(lambda scores, mask, keys: scores.softmax(-1)), "exactly 0"),
    (exercises.check_dot_attention,
     dot_with(lambda scores, mask, keys: solutions.masked_softmax(scores / keys.shape[-1] ** 0.5, mask)), "scaled"),
    (exercises.check_dot_attention,
     lambda query, keys, mask: (keys.mean(1), solutions.dot_attention(query, keys, mask)[1]), "context"),
    (exercises.check_dot_attention, lambda query, keys, mask: solutions.dot_attention(query, keys, mask)[1], "pair"),
    (exercises.check_dot_attention, lambda query, keys, mask: (query, query @ keys),
     "raised RuntimeError.*weighted sum of the keys"),  # (B, K) @ (B, S, K): a shape error, turned into a hint
    (exercises.check_context, lambda weights, keys: keys.mean(1), "plain average"),
    (exercises.check_context, lambda weights, keys: weights.unsqueeze(-1) * keys, "shape"),  # forgot the sum
    (exercises.check_context, lambda weights, keys: solutions.context(weights.flip(-1), keys), "einsum"),
]


def test_notebook_03_cases_have_pads_large_scores_and_a_batch_without_padding():
    masks = [mask for _, _, mask in nb03_attention_decoder._attention_cases()]
    assert any((~mask).any() for mask in masks) and any(mask.all() for mask in masks)
    assert any(len(set(lengths)) > 1 for lengths in exercises.ATTENTION_LENGTHS)
    with pytest.raises(AssertionError, match="overflows"):  # the large-score cases really overflow a naive exp
        exercises.check_masked_softmax(naive_softmax)


def test_the_masked_softmax_overflow_hint_does_not_suggest_a_forbidden_call():
    with pytest.raises(AssertionError) as error:
        exercises.check_masked_softmax(naive_softmax)
    assert "use torch.softmax" not in str(error.value)
