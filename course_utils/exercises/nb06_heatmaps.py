"""Checkers of notebook 06's exercises: per-step attention entropy by hand, the argmax alignment, the diagonal
deviation by hand."""
from __future__ import annotations

import math
from collections.abc import Callable

import torch

from course_utils.exercises.contract import expect, run_cases, shape_or_type

ENTROPY_FORBIDDEN = ("course_utils.metrics.attention_entropy",)


def _attention_maps(seed: int = 7) -> list[torch.Tensor]:
    """Seeded (T, S) attention maps: T < S, T > S, T == S, a peaked one with exact zeros and one-hot rows."""
    generator = torch.Generator().manual_seed(seed)
    maps = [torch.softmax(torch.randn(T, S, generator=generator) * 2, dim=-1)  # (T, S) each
            for T, S in ((4, 7), (6, 3), (5, 5))]
    peaked = torch.softmax(torch.randn(4, 6, generator=generator) * 3, dim=-1)  # (T, S)
    peaked[:, 4:] = 0.0  # two padded source positions: exactly zero
    peaked = peaked / peaked.sum(-1, keepdim=True)
    peaked[0] = torch.tensor([0.0, 1.0, 0.0, 0.0, 0.0, 0.0])  # a one-hot row: 0 * log 0 must count as 0
    return maps + [peaked]


def check_attention_entropy(student_fn: Callable[[torch.Tensor], torch.Tensor]) -> None:
    """Check `student_fn(weights (T, S)) -> entropy (T,)` in nats against metrics.attention_entropy, without
    calling it. Introduced in notebook 06 (exercise: per-step entropy by hand)."""
    from course_utils.metrics import attention_entropy
    exercise = "attention_entropy"
    cases = _attention_maps()
    hint = ("H_t = -(w_t * log w_t).sum() over the source axis (dim=-1), natural log, one number per output step; "
            "write it without calling metrics.attention_entropy")

    def check(weights: torch.Tensor, got: object) -> None:
        expected = attention_entropy(weights)  # (T,)
        T, S = weights.shape
        expect(isinstance(got, torch.Tensor) and tuple(got.shape) == (T,),
               f"{exercise}: weights of shape (T={T}, S={S}) gave {shape_or_type(got)}, expected a tensor "
               f"of shape ({T},). Hint: {hint}.")
        got = got.double()
        expect(bool(torch.isfinite(got).all()),
               f"{exercise}: your entropies contain nan or inf ({got.tolist()}). Hint: a weight of exactly 0 gives "
               f"0 * log(0) = 0 * -inf = nan; count it as 0 (torch.special.xlogy(w, w), or torch.where(w > 0, ...)).")
        if torch.allclose(got, -expected.double(), atol=1e-4) and not torch.allclose(got, expected.double()):
            raise AssertionError(f"{exercise}: your entropies are negative. Hint: H = MINUS sum w log w (log w <= 0).")
        if torch.allclose(got, expected.double() / math.log(2), atol=1e-4):
            raise AssertionError(f"{exercise}: your entropies are in bits. Hint: use the natural log (nats), "
                                 f"torch.log, so that uniform attention over S tokens gives log(S).")
        expect(torch.allclose(got, expected.double(), atol=1e-4),
               f"{exercise}: for weights of shape (T={T}, S={S}) you gave {[round(x, 4) for x in got.tolist()]}, "
               f"expected {[round(x, 4) for x in expected.tolist()]}. Hint: {hint}.")

    run_cases(exercise, student_fn, cases, hint, check, f"your entropies equal metrics.attention_entropy on all "
              f"{len(cases)} maps (T != S, exact zeros and a one-hot row included).", ENTROPY_FORBIDDEN,
              args=lambda weights: (weights,))


def check_argmax_alignment(student_fn: Callable[[torch.Tensor, list[str]], list[str]]) -> None:
    """Check `student_fn(weights (T, S), source_tokens (S,)) -> T tokens`, each step's most attended source token.
    Introduced in notebook 06 (exercise: which source word does each output word look at?)."""
    exercise = "argmax_alignment"
    cases = _attention_maps(seed=8)
    hint = ("one answer per output step (row t): the source token at weights[t].argmax(); argmax over the source "
            "axis, dim=-1, then index source_tokens with it")
    sources = [[f"w{j}" for j in range(weights.shape[1] - 1)] + ["<eos>"] for weights in cases]

    def check(case: tuple, got: object) -> None:
        weights, tokens = case
        expect(not isinstance(got, torch.Tensor),
               f"{exercise}: you returned a tensor ({got.tolist() if isinstance(got, torch.Tensor) else got}); return "
               f"the source TOKENS, e.g. [source_tokens[j] for j in indices.tolist()]. Hint: {hint}.")
        expected = [tokens[j] for j in weights.argmax(dim=-1).tolist()]  # (T, S) -> (T,) -> T tokens
        T, S = weights.shape
        expect(isinstance(got, (list, tuple)) and len(got) == T,
               f"{exercise}: weights of shape (T={T}, S={S}) gave {got!r}, expected a list of {T} tokens, one per "
               f"output step. Hint: {hint}.")
        expect(list(got) == expected,
               f"{exercise}: for weights of shape (T={T}, S={S}) you gave {list(got)}, expected {expected}. "
               f"Hint: {hint}.")

    run_cases(exercise, student_fn, list(zip(cases, sources, strict=True)), hint, check,
              f"your alignments are right on all {len(cases)} maps (T < S, T > S and T == S).",
              args=lambda case: (case[0], list(case[1])))


def check_diagonal_deviation(student_fn: Callable[[torch.Tensor], float]) -> None:
    """Check `student_fn(weights (T, S)) -> float`, mean_t sum_j w_tj |q_j - p_t| with cell-centre positions,
    against metrics.diagonal_deviation. Introduced in notebook 06 (exercise: diagonal deviation by hand)."""
    from course_utils.metrics import diagonal_deviation
    exercise = "diagonal_deviation"
    cases = _attention_maps(seed=9) + [torch.eye(5)]  # (T, S) maps; the identity lies on the diagonal: 0
    hint = ("relative positions of the cell centres, p_t = (t + 0.5) / T and q_j = (j + 0.5) / S; the distance "
            "|q_j - p_t| weighted by w_tj, summed over j, averaged over the T steps")

    def check(weights: torch.Tensor, got: object) -> None:
        T, S = weights.shape
        expect(isinstance(got, (float, int, torch.Tensor)) and torch.as_tensor(got).numel() == 1,
               f"{exercise}: you returned {got!r}; expected one number for the whole (T, S) map. Hint: {hint}.")
        got, expected = float(got), diagonal_deviation(weights)
        t, j = torch.arange(T, dtype=torch.float64)[:, None], torch.arange(S, dtype=torch.float64)[None, :]
        mistakes = {  # what a typical mistake computes -> the hint that fixes it
            "positions without the + 0.5 (cell edges, not centres)": (j / S - t / T),
            "positions as indices j - t, not fractions of the sentence length": (j - t),
        }
        for what, distance in mistakes.items():
            value = float((weights.double() * distance.abs()).sum(-1).mean())  # (T, S) -> (T,) -> one number
            if not math.isclose(value, expected, abs_tol=1e-6) and math.isclose(got, value, abs_tol=1e-6):
                raise AssertionError(f"{exercise}: for a (T={T}, S={S}) map you used {what}. Hint: {hint}.")
        if T > 1 and expected > 1e-9 and math.isclose(got, expected * T, abs_tol=1e-6):
            raise AssertionError(f"{exercise}: you summed over the output steps. Hint: average over them (mean).")
        expect(math.isclose(got, expected, abs_tol=1e-6),
               f"{exercise}: for a (T={T}, S={S}) map you gave {got:.6f}, expected {expected:.6f}. Hint: {hint}.")

    run_cases(exercise, student_fn, cases, hint, check, f"your deviation equals metrics.diagonal_deviation on all "
              f"{len(cases)} maps (T != S included, and 0 for the identity).", args=lambda weights: (weights,))
