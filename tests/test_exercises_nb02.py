"""Notebook 02's checkers: the typical mistakes get their hint, and the cases are tricky enough."""
from __future__ import annotations

import torch

from course_utils import exercises
from course_utils.exercises import solutions


def gru_step_variant(x, h, weight_ih, weight_hh, bias_ih, bias_hh, order=(0, 1), swap_z=False, bias_in_r=True):
    """One GRU step; the keyword arguments switch on the usual mistakes."""
    gi, gh = (x @ weight_ih.T + bias_ih).chunk(3, -1), (h @ weight_hh.T + bias_hh).chunk(3, -1)  # 3 x (B, H) each
    r, z = (torch.sigmoid(gi[k] + gh[k]) for k in order)
    h_n = gh[2] if bias_in_r else gh[2] - bias_hh.chunk(3)[2]
    n = torch.tanh(gi[2] + r * h_n + (0 if bias_in_r else bias_hh.chunk(3)[2]))
    return z * n + (1 - z) * h if swap_z else (1 - z) * n + z * h


MISTAKES = [  # checker, typical wrong solution, a word of the expected hint
    (exercises.check_embedding_lookup, lambda ids, weight: torch.nn.functional.one_hot(ids).float() @ weight,
     "num_classes"),  # length max + 1
    (exercises.check_embedding_lookup, lambda ids, weight: torch.nn.functional.one_hot(ids, weight.shape[0]) @ weight,
     "float"),  # long @ float
    (exercises.check_embedding_lookup, lambda ids, weight: weight[ids.reshape(-1)], "E added at the end"),  # flattened
    (exercises.check_embedding_lookup, lambda ids, weight: weight[ids] + 1, "row i of weight"),
    (exercises.check_gru_step, lambda *args: gru_step_variant(*args, swap_z=True), "share of the OLD state"),
    (exercises.check_gru_step, lambda *args: gru_step_variant(*args, bias_in_r=False), "the bias b_hn included"),
    (exercises.check_gru_step, lambda *args: gru_step_variant(*args, order=(1, 0)), "order r, z, n"),
    (exercises.check_gru_step, lambda x, h, weight_ih, *rest: x @ weight_ih.T, r"\(B, H\)"),  # (B, 3H)
    (exercises.check_final_state, lambda outputs, lengths: outputs[:, -1], "tutorial's bug"),
    (exercises.check_final_state, lambda outputs, lengths: outputs[torch.arange(len(lengths)), lengths],
     "count from 0"),  # IndexError
    (exercises.check_final_state, lambda outputs, lengths: outputs[:, lengths - 1], r"\(B, H\)"),  # (B, B, H)
]


def test_final_state_checker_accepts_advanced_indexing_and_leaves_the_random_state_alone(capsys):
    state = torch.random.get_rng_state()
    exercises.check_final_state(lambda outputs, lengths: outputs[torch.arange(len(lengths)), lengths - 1])
    exercises.check_gru_step(solutions.gru_step)
    assert capsys.readouterr().out.count("correct!") == 2
    assert torch.equal(torch.random.get_rng_state(), state)  # the checkers draw from their own generators


def test_notebook_02_cases_include_the_tricky_ones():
    """A batch without padding, a one-token sentence, unsorted lengths; a zero initial state for the GRU step."""
    lengths = exercises.FINAL_STATE_LENGTHS
    assert any(len(set(group)) == 1 for group in lengths) and any(1 in group for group in lengths)
    assert any(list(group) != sorted(group) for group in lengths)
    assert any(batch == 1 for batch, _, _ in exercises.GRU_STEP_SIZES)
