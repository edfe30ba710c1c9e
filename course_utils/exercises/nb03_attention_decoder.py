"""Checkers of notebook 03's exercises: a masked softmax by hand, dot-product attention, the context vector."""
from __future__ import annotations

from collections.abc import Callable

import torch

from course_utils import data
from course_utils.exercises.contract import expect, run_cases

ATTENTION_LENGTHS = ((5, 2, 4), (3, 3))  # a ragged batch (pads) and one without padding; S = max length
MASKED_SOFTMAX_FORBIDDEN = ("torch.softmax", "torch.nn.functional.softmax", "torch.Tensor.softmax",
                            "torch.special.softmax", "course_utils.attention.masked_softmax")
DOT_ATTENTION_FORBIDDEN = ("course_utils.attention.DotAttention", "course_utils.attention.ScaledDotAttention")
OVERFLOW_HINT = "exp() overflows for large scores: subtract each row's max before exp, or use torch.softmax, which does"


def _attention_cases(key_size: int = 6, seed: int = 0) -> list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]]:
    """Seeded (query (B, K), keys (B, S, K), mask (B, S)) cases, keys zero at pads like the encoder's outputs."""
    generator = torch.Generator().manual_seed(seed)
    cases = []
    for lengths in ATTENTION_LENGTHS:
        mask = data.lengths_to_mask(torch.tensor(lengths))  # (B,) -> (B, S)
        keys = torch.randn(*mask.shape, key_size, generator=generator) * mask.unsqueeze(-1)  # (B, S, K)
        query = torch.randn(mask.shape[0], key_size, generator=generator)  # (B, K)
        cases.append((query, keys, mask))
    return cases


def _expect_tensor(exercise: str, got: object, shape: tuple[int, ...], what: str,
                   overflow_hint: str = OVERFLOW_HINT) -> None:
    expect(isinstance(got, torch.Tensor), f"{exercise}: {what} must be a torch.Tensor, got {type(got).__name__}.")
    expect(tuple(got.shape) == shape, f"{exercise}: {what} has shape {tuple(got.shape)}, expected {shape}.")
    expect(got.is_floating_point() and bool(torch.isfinite(got).all()),
           f"{exercise}: {what}: not a float tensor, or it holds inf or nan. Hint: {overflow_hint}.")


def _expect_weights(exercise: str, weights: object, expected: torch.Tensor, mask: torch.Tensor,
                    overflow_hint: str = OVERFLOW_HINT) -> None:
    _expect_tensor(exercise, weights, tuple(expected.shape), "the weights", overflow_hint)
    expect(bool((weights[~mask] == 0).all()),
           f"{exercise}: padded positions got weight up to {weights.masked_fill(mask, 0).abs().max().item():.3g} "
           f"(lengths {mask.sum(-1).tolist()}). Hint: pads must get exactly 0: fill their scores with float('-inf') "
           f"BEFORE the softmax (scores.masked_fill(~mask, float('-inf'))); exp(-inf) = 0.")
    expect(torch.allclose(weights.sum(-1), torch.ones(weights.shape[0]), atol=1e-5),
           f"{exercise}: rows sum to {[round(x, 4) for x in weights.sum(-1).tolist()]}, expected 1 each. Hint: "
           f"take the softmax over the source axis (dim=-1), after masking (zeroing pads after a softmax "
           f"leaves rows that sum to less than 1).")
    expect(torch.allclose(weights, expected, atol=1e-5),
           f"{exercise}: weights differ from the expected ones by up to "
           f"{(weights - expected).abs().max().item():.3g}. Hint: softmax of the scores over the real positions only.")


def check_masked_softmax(student_fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]) -> None:
    """Check `student_fn(scores (B, S), mask (B, S) bool) -> weights (B, S)` against attention.masked_softmax,
    without any softmax function. Introduced in notebook 03 (exercise: masked softmax by hand)."""
    from course_utils.attention import masked_softmax
    exercise = "masked_softmax"
    hint = ("fill the pads' scores with float('-inf'), subtract each row's max, exp, divide by the row sums "
            "(dim=-1); write it without calling torch.softmax or masked_softmax")
    overflow_hint = "exp() overflows for large scores: subtract each row's max before exp (the softmax is unchanged)"
    generator = torch.Generator().manual_seed(3)
    cases = []
    for _, _, mask in _attention_cases():
        scores = torch.randn(mask.shape, generator=generator) * 3  # (B, S)
        cases += [(scores, mask), (scores * 100, mask)]  # large scores: a naive exp() overflows to inf
    run_cases(exercise, student_fn, cases, hint,
              lambda case, got: _expect_weights(exercise, got, masked_softmax(*case), case[1], overflow_hint),
              f"rows sum to 1 and pads are exactly 0 on all {len(cases)} cases, large scores included.",
              MASKED_SOFTMAX_FORBIDDEN)


def check_dot_attention(student_fn: Callable[[torch.Tensor, torch.Tensor, torch.Tensor],
                                             tuple[torch.Tensor, torch.Tensor]]) -> None:
    """Check `student_fn(query (B, K), keys (B, S, K), mask (B, S) bool) -> (context (B, K), weights (B, S))`
    against attention.DotAttention. Introduced in notebook 03 (exercise: dot-product attention)."""
    from course_utils.attention import DotAttention, ScaledDotAttention
    exercise = "dot_attention"
    hint = ("scores = q^T k for every key (B, S), masked softmax over dim=-1, context = the weighted sum of the "
            "keys (B, K); write it without calling DotAttention or ScaledDotAttention")
    cases = _attention_cases()

    def check(case: tuple, got: object) -> None:
        query, keys, mask = case
        expect(isinstance(got, tuple) and len(got) == 2,
               f"{exercise}: return the pair (context, weights), got {type(got).__name__}.")
        context, weights = got
        expected = DotAttention()(query, keys, mask)
        B, S, K = keys.shape
        _expect_tensor(exercise, context, (B, K), "the context")
        _expect_tensor(exercise, weights, (B, S), "the weights")
        scaled = ScaledDotAttention()(query, keys, mask).weights  # (B, S)
        expect(not (torch.allclose(weights, scaled, atol=1e-5) and not torch.allclose(weights, expected.weights)),
               f"{exercise}: your weights are the *scaled* dot product's (q^T k / sqrt(K)). Hint: this exercise "
               f"is the plain dot product q^T k, without the scaling.")
        _expect_weights(exercise, weights, expected.weights, mask)
        expect(torch.allclose(context, expected.context, atol=1e-5),
               f"{exercise}: the weights are right but the context is not. Hint: context[b] = sum over s of "
               f"weights[b, s] * keys[b, s], e.g. torch.bmm(weights.unsqueeze(1), keys).squeeze(1).")

    run_cases(exercise, student_fn, cases, hint, check,
              f"context and weights equal attention.DotAttention's on all {len(cases)} batches.",
              DOT_ATTENTION_FORBIDDEN)


def check_context(student_fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]) -> None:
    """Check `student_fn(weights (B, S), keys (B, S, K)) -> context (B, K)`, the weighted sum of the keys.
    Introduced in notebook 03 (exercise: the context vector with torch.einsum)."""
    from course_utils.attention import masked_softmax
    exercise = "context"
    hint = "sum over the source axis s of weights[b, s] * keys[b, s, k]: torch.einsum('bs,bsk->bk', ...)"
    generator = torch.Generator().manual_seed(4)
    cases = []
    for _, keys, mask in _attention_cases(key_size=4, seed=1):
        weights = masked_softmax(torch.randn(mask.shape, generator=generator) * 2, mask)  # (B, S)
        cases.append((weights, keys))

    def check(case: tuple, got: object) -> None:
        weights, keys = case
        B, _, K = keys.shape
        _expect_tensor(exercise, got, (B, K), "the context")
        expected = torch.bmm(weights.unsqueeze(1), keys).squeeze(1)  # (B, 1, S) @ (B, S, K) -> (B, K)
        uniform = keys.sum(1) / (keys != 0).any(-1).sum(-1, keepdim=True)  # (B, K) plain mean of the real keys
        why = ("that is the plain average of the keys: weight key s by weights[b, s]" if
               torch.allclose(got, uniform, atol=1e-5) or torch.allclose(got, keys.mean(1), atol=1e-5) else hint)
        expect(torch.allclose(got, expected, atol=1e-5),
               f"{exercise}: the context differs from the weighted sum of the keys. Hint: {why}.")

    run_cases(exercise, student_fn, cases, hint, check, f"your context equals "
              f"torch.bmm(weights.unsqueeze(1), keys).squeeze(1) on all {len(cases)} batches.")
