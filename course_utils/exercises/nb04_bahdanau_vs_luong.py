"""Checkers of notebook 04's exercises: Luong's general score and Bahdanau's additive score by hand, an attention
module's parameters counted by hand."""
from __future__ import annotations

from collections.abc import Callable

import torch

from course_utils.exercises.contract import expect, first_match, run_cases, shape_or_type

SCORE_SIZES = ((2, 3, 5, 4, 6, 7), (1, 4, 4, 5, 5, 5))  # (B, T, S, Hq, K, A): all different; then a square case


def _score_cases(seed: int = 10) -> list[tuple[torch.Tensor, torch.Tensor, int]]:
    """Seeded (query (B, T, Hq), keys (B, S, K), A): every size different (wrong layouts fail loudly), then a square
    case where only the values can tell."""
    generator = torch.Generator().manual_seed(seed)
    return [(torch.randn(B, T, Hq, generator=generator), torch.randn(B, S, K, generator=generator), A)
            for B, T, S, Hq, K, A in SCORE_SIZES]


def _seeded_weights(module: torch.nn.Module, generator: torch.Generator) -> torch.nn.Module:
    with torch.no_grad():
        for parameter in module.parameters():
            parameter.copy_(torch.randn(parameter.shape, generator=generator) * 0.5)
    return module


def _scorer_cases(build: Callable[[int, int, int], torch.nn.Module], seed: int) -> list[tuple]:
    """(query, keys, build(Hq, K, A) with seeded weights) per `_score_cases()`; the student's random state kept."""
    generator = torch.Generator().manual_seed(seed)
    cases = []
    for query, keys, attention_size in _score_cases():
        with torch.random.fork_rng():
            scorer = build(query.shape[-1], keys.shape[-1], attention_size)
        cases.append((query, keys, _seeded_weights(scorer, generator)))
    return cases


def _expect_scores(exercise: str, got: object, expected: torch.Tensor, hint: str,
                   mistakes: dict[str, torch.Tensor]) -> None:
    B, T, S = expected.shape
    expect(isinstance(got, torch.Tensor) and tuple(got.shape) == (B, T, S),
           f"{exercise}: expected scores of shape (B, T, S) = {(B, T, S)}, got {shape_or_type(got)}. Hint: {hint}.")
    if torch.allclose(got, expected, atol=1e-5):
        return
    if T == S:  # square: a (B, S, T) result has the right shape and the wrong layout
        mistakes = {**mistakes, "your scores are transposed, (B, S, T): row t must hold step t's scores for "
                                "all S keys": expected.transpose(1, 2)}
    why = first_match(got, mistakes, lambda got, wrong: wrong.shape == got.shape and torch.allclose(got, wrong,
                                                                                                      atol=1e-5))
    raise AssertionError(f"{exercise}: {why}. Hint: {hint}." if why else f"{exercise}: with (B, T, S) = {(B, T, S)} "
                         f"your scores differ from the module's by up to {(got - expected).abs().max().item():.3g}. "
                         f"Hint: {hint}.")


def check_general_score(student_fn: Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]) -> None:
    """Check `student_fn(query (B, T, Hq), keys (B, S, K), weight (K, Hq)) -> scores (B, T, S)`, Luong's q^T W k
    with W = weight.T, against GeneralAttention.score. Introduced in notebook 04 (exercise: the general score)."""
    from course_utils.attention import GeneralAttention
    exercise = "general_score"
    hint = ("`weight` is nn.Linear's (K, Hq) matrix, so W = weight.T and q^T W k = (query @ weight.T) @ keys^T: "
            "torch.einsum('bth,kh,bsk->bts', query, weight, keys); return the raw scores (no softmax, no scaling)")
    cases = _scorer_cases(lambda query_size, key_size, _: GeneralAttention(query_size, key_size), seed=11)

    def check(case: tuple, got: object) -> None:
        query, keys, attention = case
        weight = attention.linear.weight.detach()  # (K, Hq)
        with torch.no_grad():
            expected = attention.score(query, keys, None)  # (B, T, S)
        mistakes = {"these are attention weights (after a softmax); the exercise asks for the scores":
                        expected.softmax(-1),
                    "your scores are divided by sqrt(K): that is the scaled dot product, not Luong's general score":
                        expected / keys.shape[-1] ** 0.5}
        if weight.shape[0] == weight.shape[1]:  # square: a missing transpose runs, with the wrong values
            mistakes["you used W = weight, not its transpose (nn.Linear stores (out, in) = (K, Hq))"] = \
                query @ weight @ keys.transpose(1, 2)  # (B, T, Hq) @ (Hq, K) @ (B, K, S) -> (B, T, S)
        _expect_scores(exercise, got, expected, hint, mistakes)

    run_cases(exercise, student_fn, cases, hint, check,
              f"your scores equal GeneralAttention.score on all {len(cases)} cases (Hq != K included).",
              args=lambda case: (case[0], case[1], case[2].linear.weight.detach()))


def check_bahdanau_score(student_fn: Callable[..., torch.Tensor]) -> None:
    """Check `student_fn(query (B, T, Hq), keys (B, S, K), W (A, Hq), U (A, K), v (A,)) -> scores (B, T, S)`,
    v^T tanh(W q + U k), against BahdanauAttention.score. Introduced in notebook 04 (exercise: the additive score)."""
    from course_utils.attention import BahdanauAttention
    exercise = "bahdanau_score"
    hint = ("W q is query @ W.T (B, T, A), U k is keys @ U.T (B, S, A); add them as (B, T, 1, A) + (B, 1, S, A) "
            "-> (B, T, S, A), apply tanh, then the dot product with v over A -> (B, T, S)")
    cases = _scorer_cases(BahdanauAttention, seed=12)

    def arguments(query, keys, attention):
        return (query, keys, attention.query_layer.weight.detach(), attention.key_layer.weight.detach(),
                attention.energy_layer.weight.detach()[0])

    def check(case: tuple, got: object) -> None:
        query, keys, W, U, v = arguments(*case)
        attention = case[2]
        with torch.no_grad():
            expected = attention.score(query, keys, attention.project_keys(keys))  # (B, T, S)
        summed = (query @ W.T).unsqueeze(2) + (keys @ U.T).unsqueeze(1)  # (B, T, S, A)
        mistakes = {"no tanh: the energies are tanh(W q + U k), squashed before v reads them": summed @ v,  # (B, T, S)
                    "tanh after v: the score is v^T tanh(...), the tanh goes INSIDE, before the product with v":
                        torch.tanh(summed @ v),
                    "these are attention weights (after a softmax); the exercise asks for the scores":
                        expected.softmax(-1)}
        _expect_scores(exercise, got, expected, hint, mistakes)

    run_cases(exercise, student_fn, cases, hint, check, f"your scores equal BahdanauAttention.score on all "
              f"{len(cases)} cases (T != S and Hq != K != A included).", args=lambda case: arguments(*case))


ATTENTION_PARAMETER_CASES = (("bahdanau", 4, 6, 5), ("general", 4, 6, 5), ("concat", 4, 6, 5), ("dot", 6, 6, 5),
                             ("scaled_dot", 6, 6, 5), ("bahdanau", 256, 512, 128), ("general", 256, 512, 128),
                             ("concat", 256, 512, 128))  # (kind, Hq, K, A)


def check_attention_parameters(student_fn: Callable[[str, int, int, int], int]) -> None:
    """Check `student_fn(kind, query_size, key_size, attention_size) -> int`, make_attention(...)'s parameters
    counted by hand. Introduced in notebook 04 (exercise: count an attention module's parameters)."""
    from course_utils.attention import make_attention
    from course_utils.seq2seq import count_parameters
    exercise = "attention_parameters"
    hint = ("read the modules: bahdanau has W (A, Hq), U (A, K) and v (A); general one (K, Hq) matrix; concat "
            "W (A, Hq + K) and v (A); dot and scaled_dot none; no biases anywhere")

    def check(case: tuple, got: object) -> None:
        kind, Hq, K, A = case
        with torch.random.fork_rng():
            expected = count_parameters(make_attention(kind, Hq, K, A))
        expect(isinstance(got, int) or (isinstance(got, torch.Tensor) and got.numel() == 1),
               f"{exercise}: ({kind!r}, Hq={Hq}, K={K}, A={A}) gave {got!r}; return one whole number.")
        got = int(got)
        if got == expected:
            return
        mistakes = {"the scorers have no biases (bias=False, as in the papers)":
                        {"bahdanau": expected + 2 * A + 1, "general": expected + K, "concat": expected + A + 1},
                    "you forgot v, the energy vector of A entries that turns tanh(...) into one score":
                        {"bahdanau": expected - A, "concat": expected - A},
                    "concat's W multiplies the concatenation [q; k] of size Hq + K, not a vector of size Hq":
                        {"concat": A * Hq + A},
                    "dot and scaled_dot compare q and k directly: they have no parameters":
                        {"dot": Hq * K, "scaled_dot": Hq * K}}
        why = first_match(got, mistakes, lambda got, wrong: wrong.get(kind) == got)
        raise AssertionError(f"{exercise}: ({kind!r}, Hq={Hq}, K={K}, A={A}) gave {got:,}, expected {expected:,}. "
                             f"Hint: {why or hint}.")

    run_cases(exercise, student_fn, ATTENTION_PARAMETER_CASES, hint, check, f"your counts equal "
              f"count_parameters(make_attention(...)) on all {len(ATTENTION_PARAMETER_CASES)} cases (every kind, "
              f"small and lecture-sized).")
