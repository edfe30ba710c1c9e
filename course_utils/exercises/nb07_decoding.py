"""Checkers of notebook 07's exercises: the sampling distribution (temperature and top-k), one beam-search step,
and unknown-word replacement by attention."""
from __future__ import annotations

import math
from collections.abc import Callable

import torch

from course_utils.exercises.contract import expect, run_cases, shape_or_type
from course_utils.search import beam_step

BEAM_STEP_CASES = ((1, 3), (3, 3), (4, 2), (2, 1))  # (open hypotheses N, open slots): the beam shrinks as some end
SAMPLING_SETTINGS = ((1.0, None), (0.5, None), (2.0, 3), (1.0, 1))  # (temperature, top_k)
REPLACE_FORBIDDEN = ("course_utils.translate.replace_unknown_words",)
VOCAB = 9  # V of the checkers' made-up distributions; ids 0 and 1 (PAD, SOS) are forbidden (-inf) as in search


def _log_probs(rows: int, seed: int) -> torch.Tensor:
    """Seeded next-token log-probabilities (rows, V) with PAD and SOS at -inf, like search.forbid_special_tokens."""
    generator = torch.Generator().manual_seed(seed)
    log_probs = torch.log_softmax(torch.randn(rows, VOCAB, generator=generator) * 2, dim=-1)  # (rows, V)
    log_probs[:, :2] = -math.inf
    return log_probs


def _sampling_distribution(log_probs: torch.Tensor, temperature: float, top_k: int | None) -> torch.Tensor:
    """The reference: softmax(log_probs / T) over the top_k best tokens (others 0). (B, V) -> (B, V)."""
    scaled = log_probs / temperature
    if top_k is not None:
        kth_best = scaled.topk(top_k, dim=-1).values[:, -1:]  # (B, 1)
        scaled = scaled.masked_fill(scaled < kth_best, -math.inf)
    return scaled.softmax(dim=-1)


def check_sampling_distribution(student_fn: Callable[..., torch.Tensor]) -> None:
    """Check `student_fn(log_probs (B, V), temperature, top_k) -> probs (B, V)`, the distribution `sample_decode`
    draws from. Introduced in notebook 07 (exercise: temperature and top-k by hand)."""
    exercise = "sampling_distribution"
    hint = ("divide the log-probabilities by the temperature, set every entry below the k-th largest of its row to "
            "-inf (scaled.topk(k, dim=-1).values[:, -1:]), then softmax over the vocabulary axis (dim=-1)")
    log_probs = _log_probs(3, seed=21)  # (B, V)

    def check(case: tuple, got: object) -> None:
        temperature, top_k = case
        expected = _sampling_distribution(log_probs, temperature, top_k)
        setting = f"temperature={temperature}, top_k={top_k}"
        expect(isinstance(got, torch.Tensor) and got.shape == expected.shape,
               f"{exercise}: for log_probs of shape {tuple(log_probs.shape)} ({setting}) you returned "
               f"{shape_or_type(got)}, expected a tensor of shape {tuple(expected.shape)}. Hint: {hint}.")
        got = got.float()
        if not torch.allclose(got, expected, atol=1e-5):
            if torch.allclose(got, _sampling_distribution(log_probs * temperature * temperature, temperature, top_k),
                              atol=1e-5):
                raise AssertionError(f"{exercise}: ({setting}) you multiplied by the temperature. Hint: DIVIDE, so "
                                     "that a temperature below 1 sharpens the distribution.")
            expect(torch.allclose(got.sum(-1), torch.ones(len(got)), atol=1e-4),
                   f"{exercise}: ({setting}) your rows sum to {[round(x, 4) for x in got.sum(-1).tolist()]}, not 1. "
                   f"Hint: cut to the top k BEFORE the softmax (mask with -inf), or renormalise; softmax over dim=-1.")
            kept = (got > 0).sum(-1).tolist()
            raise AssertionError(f"{exercise}: ({setting}) your first row is {[round(x, 4) for x in got[0].tolist()]}"
                                 f", expected {[round(x, 4) for x in expected[0].tolist()]} (tokens kept per row: "
                                 f"{kept}). Hint: {hint}.")

    run_cases(exercise, student_fn, SAMPLING_SETTINGS, hint, check, f"your distributions equal sample_decode's for "
              f"all {len(SAMPLING_SETTINGS)} settings (top_k=1 leaves one token: greedy).",
              args=lambda setting: (log_probs, *setting))


def check_beam_step(student_fn: Callable[..., tuple]) -> None:
    """Check `student_fn(alive_log_probs (N,), step_log_probs (N, V), open_slots) -> (top_log_probs (n,),
    parents (n,), tokens (n,))`, one step of search.beam_search. Introduced in notebook 07 (exercise: one beam step)."""
    exercise = "beam_step"
    hint = ("candidates = (alive_log_probs[:, None] + step_log_probs).reshape(-1), shape (N * V,); "
            "values, index = candidates.topk(open_slots); parent = index // V, token = index % V")
    cases = []
    for seed, (rows, slots) in enumerate(BEAM_STEP_CASES):
        alive = -torch.rand(rows, generator=torch.Generator().manual_seed(30 + seed)) * 3  # (N,) log P of prefixes
        cases.append((alive, _log_probs(rows, seed=40 + seed), slots))

    def check(case: tuple, got: object) -> None:
        alive, step_log_probs, slots = case
        expected = beam_step(alive, step_log_probs, slots)
        where = f"N={len(alive)} open hypotheses, V={VOCAB}, open_slots={slots}"
        expect(isinstance(got, (tuple, list)) and len(got) == 3,
               f"{exercise}: ({where}) you returned {type(got).__name__}; expected three tensors (top_log_probs, "
               f"parents, tokens). Hint: {hint}.")
        got = [torch.as_tensor(part) for part in got]
        expect(all(part.shape == (slots,) for part in got),
               f"{exercise}: ({where}) your tensors have shapes {[tuple(part.shape) for part in got]}, expected "
               f"({slots},) each: exactly open_slots candidates survive. Hint: {hint}.")
        values, parents, tokens = got
        if parents.tolist() != expected[1].tolist() and tokens.tolist() == expected[1].tolist():
            raise AssertionError(f"{exercise}: ({where}) parents and tokens are swapped. Hint: the flat index is "
                                 "parent * V + token, so parent = index // V and token = index % V.")
        per_row = step_log_probs.reshape(-1).topk(slots)
        if not torch.allclose(values.float(), expected[0]) and torch.allclose(values.float(), per_row.values):
            raise AssertionError(f"{exercise}: ({where}) you ranked the next tokens by their own log-probability. "
                                 "Hint: add each prefix's log-probability first (alive_log_probs[:, None] + ...): the "
                                 "beam ranks WHOLE hypotheses.")
        expect(torch.allclose(values.float(), expected[0]) and parents.tolist() == expected[1].tolist()
               and tokens.tolist() == expected[2].tolist(),
               f"{exercise}: ({where}) you kept (parent, token) {list(zip(parents.tolist(), tokens.tolist()))}, "
               f"expected {list(zip(expected[1].tolist(), expected[2].tolist()))} (best first). Hint: {hint}.")

    run_cases(exercise, student_fn, cases, hint, check, f"your step equals search.beam_search's on all {len(cases)} "
              "cases (a first step with N=1, and a beam that shrank after hypotheses ended).")


def _replace_cases() -> list[tuple[list[str], list[str], torch.Tensor]]:
    """(output tokens, source tokens, attention (T, S)): two <unk>, an <unk> row peaking on <eos>, one on ".", none."""
    generator = torch.Generator().manual_seed(50)
    source = ["il", "a", "vu", "zorglub", "a", "paris", ".", "<eos>"]
    outputs = [["he", "saw", "<unk>", "in", "<unk>", ".", "<eos>"], ["<unk>", "is", "here", ".", "<eos>"],
               ["he", "saw", "<unk>", ".", "<eos>"], ["he", "saw", "it", ".", "<eos>"]]
    cases = []
    for output in outputs:
        attention = torch.softmax(torch.randn(len(output), len(source), generator=generator) * 2, dim=-1)  # (T, S)
        cases.append((output, source, attention))
    cases[1][2][0] = torch.tensor([0.1, 0.05, 0.05, 0.2, 0.05, 0.05, 0.05, 0.45])  # the <unk> step peaks on <eos>
    cases[2][2][2] = torch.tensor([0.05, 0.05, 0.05, 0.25, 0.05, 0.05, 0.45, 0.05])  # ... and here on "."
    return cases


def _replaced(output: list[str], source: list[str], attention: torch.Tensor, allowed: list[int]) -> list[str]:
    """Each <unk> replaced by the source token at the most attended of the `allowed` positions."""
    aligned = attention[:, allowed].argmax(dim=-1).tolist()  # (T,)
    return [source[allowed[aligned[t]]] if token == "<unk>" else token for t, token in enumerate(output)]


def check_replace_unknown(student_fn: Callable[..., list[str]]) -> None:
    """Check `student_fn(output_tokens, source_tokens, attention (T, S)) -> T tokens`, each "<unk>" replaced by the
    most attended source word. Introduced in notebook 07 (exercise: the rare-word trick by hand)."""
    exercise = "replace_unknown"
    hint = ("words = the positions j < S - 1 whose token has a letter or digit; for each t with output_tokens[t] == "
            "'<unk>': j = words[attention[t, words].argmax()], then source_tokens[j]; keep the other tokens")
    cases = _replace_cases()

    def check(case: tuple, got: object) -> None:
        output, source, attention = case
        words = [j for j in range(len(source) - 1) if any(character.isalnum() for character in source[j])]
        expected = _replaced(output, source, attention, words)
        expect(isinstance(got, (list, tuple)) and len(got) == len(output),
               f"{exercise}: for {output} you returned {got!r}; expected a list of {len(output)} tokens. "
               f"Hint: {hint}.")
        got = list(got)
        if got != expected and got == _replaced(output, source, attention, list(range(len(source) - 1))):
            raise AssertionError(f"{exercise}: for {output} you copied a punctuation mark. Hint: only words can "
                                 "replace an unknown word: leave out the tokens without a letter or digit.")
        if got != expected and got == _replaced(output, source, attention, list(range(len(source)))):
            raise AssertionError(f"{exercise}: for {output} you copied '<eos>'. Hint: leave the source <eos> out of "
                                 "the argmax (attention[t, :-1]); it is no word to copy.")
        expect(got == expected, f"{exercise}: for {output} you gave {got}, expected {expected}. Hint: {hint}.")

    run_cases(exercise, student_fn, cases, hint, check, f"your replacement equals translate.replace_unknown_words on "
              f"all {len(cases)} outputs (rows that peak on <eos> or on '.', and an output without <unk>, included).",
              REPLACE_FORBIDDEN, args=lambda case: (list(case[0]), list(case[1]), case[2]))
