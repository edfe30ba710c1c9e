"""Checkers of notebook 02's exercises: the embedding lookup as a one-hot product, a GRU step by hand, the final
state taken from padded outputs."""
from __future__ import annotations

from collections.abc import Callable

import torch

from course_utils import data
from course_utils.exercises.contract import expect, first_match, run_cases, shape_or_type
from course_utils.vocab import EOS_ID, PAD_ID


def check_embedding_lookup(student_fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]) -> None:
    """Check `student_fn(ids (*) long, weight (V, E)) -> vectors (*, E)`, written as a one-hot product, against
    F.embedding. Introduced in notebook 02 (exercise: nn.Embedding is a one-hot matrix product)."""
    exercise = "embedding_lookup"
    generator = torch.Generator().manual_seed(2)
    weight = torch.randn(11, 4, generator=generator)  # (V, E)
    cases = [torch.randint(0, 11, shape, generator=generator) for shape in ((6,), (6, 1), (3, 5))]  # ids (*)
    cases.insert(0, torch.tensor(5))  # a single id, shape (): its one-hot vector is shorter than V without num_classes
    hint = ("F.one_hot(ids, num_classes=V) is (*, V) with V = weight.shape[0] (without num_classes its length "
            "is max(ids) + 1); make it float before the product (*, V) @ (V, E) -> (*, E)")

    def check(ids: torch.Tensor, got: object) -> None:
        expected = torch.nn.functional.embedding(ids, weight)  # (*, E)
        expect(isinstance(got, torch.Tensor) and tuple(got.shape) == tuple(expected.shape),
               f"{exercise}: ids of shape {tuple(ids.shape)} gave {shape_or_type(got)}, expected a tensor "
               f"of shape {tuple(expected.shape)}: the shape of ids with E added at the end. Hint: {hint}.")
        expect(torch.allclose(got.float(), expected, atol=1e-6),
               f"{exercise}: ids {ids.tolist()} gave the wrong vectors. Hint: the vector of id i is row i of "
               f"weight; {hint}.")

    run_cases(exercise, student_fn, cases, hint, check, f"your lookup equals nn.Embedding's on ids of shapes "
              f"{', '.join(str(tuple(ids.shape)) for ids in cases)}.", args=lambda ids: (ids, weight), first=1)


GRU_STEP_SIZES = ((3, 5, 4), (1, 2, 6))  # (B, E, H) of the cases


def check_gru_step(student_fn: Callable[..., torch.Tensor]) -> None:
    """Check `student_fn(x (B, E), h (B, H), weight_ih (3H, E), weight_hh (3H, H), bias_ih (3H,), bias_hh (3H,))
    -> h_next (B, H)`, one GRU step from the gate equations (PyTorch's row order r, z, n), against nn.GRUCell.
    Introduced in notebook 02 (exercise: a GRU step by hand)."""
    from torch import nn
    exercise = "gru_step"
    generator = torch.Generator().manual_seed(5)
    cases = []
    for batch_size, input_size, hidden_size in GRU_STEP_SIZES:
        with torch.random.fork_rng():  # GRUCell's own initialisation draws from the global generator
            cell = nn.GRUCell(input_size, hidden_size)
        with torch.no_grad():
            for parameter in cell.parameters():  # seeded weights, without touching the global random state
                parameter.copy_(torch.randn(parameter.shape, generator=generator))
        x = torch.randn(batch_size, input_size, generator=generator)  # (B, E)
        random_state = torch.randn(batch_size, hidden_size, generator=generator)  # (B, H)
        for h in (random_state, torch.zeros(batch_size, hidden_size)):
            cases.append((cell, x, h))  # a random state and the zero initial state

    def variants(cell: nn.GRUCell, x: torch.Tensor, h: torch.Tensor) -> dict[str, torch.Tensor]:
        gi, gh = x @ cell.weight_ih.T + cell.bias_ih, h @ cell.weight_hh.T + cell.bias_hh  # (B, 3H) each
        (i_r, i_z, i_n), (h_r, h_z, h_n) = gi.chunk(3, dim=-1), gh.chunk(3, dim=-1)  # (B, 3H) -> 3 x (B, H)
        r, z = torch.sigmoid(i_r + h_r), torch.sigmoid(i_z + h_z)
        n = torch.tanh(i_n + r * h_n)
        swapped_r, swapped_z = torch.sigmoid(i_z + h_z), torch.sigmoid(i_r + h_r)
        swapped_n = torch.tanh(i_n + swapped_r * h_n)
        b_hn = cell.bias_hh.chunk(3)[2]  # (3H,) -> (H,)
        return {
            "h' = (1 - z) * n + z * h: z is the share of the OLD state that is kept (some papers swap z and 1 - z; "
            "PyTorch does not)": z * n + (1 - z) * h,
            "r multiplies (W_hn h + b_hn), the bias b_hn included: n = tanh(W_in x + b_in + r * (W_hn h + b_hn))":
                (1 - z) * torch.tanh(i_n + r * (h_n - b_hn) + b_hn) + z * h,
            "the rows of weight_ih and weight_hh are the gates in the order r, z, n: chunk(3) gives r first":
                (1 - swapped_z) * swapped_n + swapped_z * h,
        }

    hint = ("r = sigmoid(W_ir x + b_ir + W_hr h + b_hr), z = sigmoid(W_iz x + b_iz + W_hz h + b_hz), "
            "n = tanh(W_in x + b_in + r * (W_hn h + b_hn)), h' = (1 - z) * n + z * h; x @ weight_ih.T is (B, 3H)")

    def student(*args: torch.Tensor) -> object:
        with torch.no_grad():
            return student_fn(*args)

    def check(case: tuple, got: object) -> None:
        cell, x, h = case
        with torch.no_grad():
            expected = cell(x, h)  # (B, H)
            mistakes = variants(cell, x, h)
        expect(isinstance(got, torch.Tensor) and tuple(got.shape) == tuple(expected.shape),
               f"{exercise}: with B, E, H = {x.shape[0]}, {x.shape[1]}, {h.shape[1]} your function returned "
               f"{shape_or_type(got)}, expected a tensor of shape {tuple(expected.shape)} (B, H). Hint: {hint}.")
        if not torch.allclose(got, expected, atol=1e-5):
            why = first_match(got, mistakes, lambda got, wrong: torch.allclose(got, wrong, atol=1e-5))
            state = "the zero state h = 0" if not h.any() else "a random state h"
            raise AssertionError(f"{exercise}: with {state}, h' differs from nn.GRUCell's by up to "
                                 f"{(got - expected).abs().max().item():.3g}. Hint: {why or hint}.")

    run_cases(exercise, student, cases, hint, check,
              f"your step equals nn.GRUCell on all {len(cases)} cases (random and zero states).",
              args=lambda case: (case[1], case[2], *(p.detach() for p in (case[0].weight_ih, case[0].weight_hh,
                                                                          case[0].bias_ih, case[0].bias_hh))))


FINAL_STATE_LENGTHS = ((3, 7, 5), (4, 4), (1, 6))  # unsorted, no padding at all, a one-token sentence


def check_final_state(student_fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]) -> None:
    """Check `student_fn(outputs (B, S, H), lengths (B,)) -> final (B, H)`, each sentence's output at its last real
    position (outputs of an unpacked encoder), against the packed EncoderRNN's final state.
    Introduced in notebook 02 (exercise: the final state by gather)."""
    from course_utils.encoder import EncoderRNN
    exercise = "final_state"
    vocab_size, generator = 20, torch.Generator().manual_seed(6)
    with torch.random.fork_rng():  # a seeded model without changing the student's random state
        torch.manual_seed(6)
        encoder = EncoderRNN(vocab_size, 6, 5).eval()
    cases = []
    for lengths in FINAL_STATE_LENGTHS:
        lengths = torch.tensor(lengths)  # (B,)
        src = torch.randint(4, vocab_size, (len(lengths), int(lengths.max())), generator=generator)  # (B, S)
        src[torch.arange(len(lengths)), lengths - 1] = EOS_ID
        src[~data.lengths_to_mask(lengths, src.shape[1])] = PAD_ID  # (B, S) pads after each length
        with torch.no_grad():
            cases.append((encoder(src, lengths, packed=False).outputs, lengths, encoder(src, lengths).final))
    hint = ("row b's last real output is outputs[b, lengths[b] - 1] (positions count from 0): index with "
            "(torch.arange(B), lengths - 1), or outputs.gather(1, index) with an index of shape (B, 1, H)")

    def check(case: tuple, got: object) -> None:
        outputs, lengths, expected = case
        expect(isinstance(got, torch.Tensor) and tuple(got.shape) == tuple(expected.shape),
               f"{exercise}: for outputs of shape {tuple(outputs.shape)} your function returned "
               f"{shape_or_type(got)}, expected a tensor of shape {tuple(expected.shape)} (B, H). Hint: {hint}.")
        if not torch.allclose(got, expected, atol=1e-5):
            last_column = ("that is the last column, outputs[:, -1]: for the shorter sentences it is a step that "
                           "read PAD tokens (the current PyTorch tutorial's bug); "
                           if torch.allclose(got, outputs[:, -1], atol=1e-5) else "")
            raise AssertionError(f"{exercise}: with lengths {lengths.tolist()} your final states differ from the "
                                 f"packed encoder's. Hint: {last_column}{hint}.")

    run_cases(exercise, student_fn, cases, hint, check, f"your final states equal the packed encoder's on all "
              f"{len(cases)} batches (unsorted lengths, no padding, a one-token sentence).", args=lambda c: c[:2])
