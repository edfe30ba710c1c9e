"""Notebook 04's checkers: the typical mistakes get their hint, and the cases are tricky enough."""
from __future__ import annotations

import torch

from course_utils import exercises
from course_utils.exercises import solutions


def bahdanau_variant(query, keys, W, U, v, tanh=True, tanh_after_v=False):
    """Bahdanau's score; the keyword arguments switch on the usual mistakes."""
    energies = (query @ W.T).unsqueeze(2) + (keys @ U.T).unsqueeze(1)  # (B, T, S, A)
    if tanh_after_v:
        return torch.tanh(energies @ v)  # (B, T, S)
    return (torch.tanh(energies) if tanh else energies) @ v  # (B, T, S)


def parameters_variant(kind, query_size, key_size, attention_size, biases=False, v=True):
    """The parameter count; the keyword arguments switch on the usual mistakes."""
    A, extra = attention_size, (attention_size if v else 0)
    counts = {"bahdanau": A * query_size + A * key_size + extra + (2 * A + 1 if biases else 0),
              "general": key_size * query_size + (key_size if biases else 0),
              "concat": A * (query_size + key_size) + extra + (A + 1 if biases else 0),
              "dot": 0, "scaled_dot": 0}
    return counts[kind]


general = solutions.general_score
MISTAKES = [  # checker, typical wrong solution, a word of the expected hint
    (exercises.check_general_score, lambda query, keys, weight: query @ weight @ keys.transpose(1, 2),
     "transpose|weight.T"),  # W = weight
    (exercises.check_general_score, lambda query, keys, weight: general(query, keys, weight).softmax(-1), "softmax"),
    (exercises.check_general_score, lambda query, keys, weight: general(query, keys, weight) / keys.shape[-1] ** 0.5,
     "scaled"),
    (exercises.check_general_score, lambda query, keys, weight: general(query, keys, weight).transpose(1, 2),
     r"\(B, T, S\)"),
    (exercises.check_bahdanau_score, lambda *args: bahdanau_variant(*args, tanh=False), "no tanh"),
    (exercises.check_bahdanau_score, lambda *args: bahdanau_variant(*args, tanh_after_v=True), "INSIDE"),
    (exercises.check_bahdanau_score, lambda q, k, W, U, v: bahdanau_variant(q, k, W, U, v).softmax(-1), "softmax"),
    (exercises.check_bahdanau_score, lambda q, k, W, U, v: torch.tanh(q @ W.T + k @ U.T) @ v,
     r"\(B, 1, S, A\)"),  # no broadcasting over T, S
    (exercises.check_bahdanau_score, lambda q, k, W, U, v: torch.tanh(q @ W + k @ U) @ v,
     r"query @ W.T"),  # weights not transposed
    (exercises.check_attention_parameters, lambda *args: parameters_variant(*args, biases=True), "no biases"),
    (exercises.check_attention_parameters, lambda *args: parameters_variant(*args, v=False), "forgot v"),
    (exercises.check_attention_parameters,
     lambda kind, Hq, K, A: A * Hq + A if kind == "concat" else parameters_variant(kind, Hq, K, A), "Hq \\+ K"),
    (exercises.check_attention_parameters,
     lambda kind, Hq, K, A: Hq * K if "dot" in kind else parameters_variant(kind, Hq, K, A), "no parameters"),
    (exercises.check_attention_parameters, lambda kind, Hq, K, A: [parameters_variant(kind, Hq, K, A)],
     "one whole number"),
    (exercises.check_attention_parameters, lambda kind, Hq, K, A: A * (Hq + K) + torch.zeros(A).shape[1],
     "read the modules"),  # IndexError
]


def test_notebook_04_cases_make_shape_mistakes_fail_and_leave_the_random_state_alone(capsys):
    """One case with every size different (transposes and missing unsqueezes fail), one square case (they run and
    only the values tell); the checkers build modules without moving the student's random state."""
    sizes = exercises.SCORE_SIZES
    assert any(len({T, S}) == 2 and len({Hq, K, A}) == 3 for _, T, S, Hq, K, A in sizes)
    assert any(T == S and Hq == K == A for _, T, S, Hq, K, A in sizes)
    kinds = {kind for kind, *_ in exercises.ATTENTION_PARAMETER_CASES}
    assert kinds == {"bahdanau", "dot", "general", "concat", "scaled_dot"}
    state = torch.random.get_rng_state()
    exercises.check_general_score(solutions.general_score)
    exercises.check_bahdanau_score(solutions.bahdanau_score)
    exercises.check_attention_parameters(solutions.attention_parameters)
    assert capsys.readouterr().out.count("correct!") == 3
    assert torch.equal(torch.random.get_rng_state(), state)
