"""Checkers of notebook 08's exercises: the sparsity term over the words only, the rationale's precision and
recall, a bag-of-words classifier's logits by hand."""
from __future__ import annotations

import math
from collections.abc import Callable

import torch

from course_utils.data import lengths_to_mask
from course_utils.exercises.contract import attempted, call_student, expect, passed, run_cases, shape_or_type

SPARSITY_LENGTHS = ((4, 2, 3), (5,), (1, 6))  # sentence lengths of each case: unequal, so per-sentence matters
RATIONALE_FORBIDDEN = ("course_utils.metrics.rationale_scores",)


def _number(got: object) -> float | None:
    """`got` as a float when it is one number (a float, int or one-element tensor), else None."""
    if isinstance(got, (float, int)) or (isinstance(got, torch.Tensor) and got.numel() == 1):
        return float(got)
    return None


def _sparsity_cases(seed: int = 11) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """(gates (B, S), mask (B, S)), gates on the padding too (the sigmoid's raw output)."""
    generator = torch.Generator().manual_seed(seed)
    cases = []
    for lengths in SPARSITY_LENGTHS:
        S = max(lengths) + 1  # at least one padded position in every row
        mask = lengths_to_mask(torch.tensor(lengths), S)  # (B, S)
        cases.append((torch.rand(len(lengths), S, generator=generator), mask))
    return cases


def check_sparsity(student_fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]) -> None:
    """Check `student_fn(gates (B, S), mask (B, S)) -> scalar`, the mean over sentences of their fraction of words
    kept. Introduced in notebook 08 (exercise: the sparsity term, over the words only)."""
    exercise = "sparsity"
    cases = _sparsity_cases()
    hint = ("per sentence: (gates * mask).sum(dim=1) / mask.sum(dim=1), the fraction of its words kept; then the "
            "mean over the B sentences")

    def check(case: tuple, got: object) -> None:
        gates, mask = case
        got = _number(got)
        expect(got is not None, f"{exercise}: return one number (a scalar tensor) for the whole batch. Hint: {hint}.")
        expected = float(((gates * mask).sum(1) / mask.sum(1)).mean())
        mistakes = {  # what a typical mistake computes -> the hint that fixes it
            "averaged over every position, the padding included": float(gates.mean()),
            "zeroed the WORDS (masked_fill fills where the mask is True, the lecture's bug)":
                float(gates.masked_fill(mask, 0.0).mean()),
            "divided by all B * S positions, not by each sentence's length": float((gates * mask).mean()),
            "averaged over all the words of the batch at once, not per sentence (long sentences weigh more)":
                float((gates * mask).sum() / mask.sum()),
        }
        for what, value in mistakes.items():
            if not math.isclose(value, expected, abs_tol=1e-6) and math.isclose(got, value, abs_tol=1e-5):
                raise AssertionError(f"{exercise}: with lengths {mask.sum(1).tolist()} you {what}. Hint: {hint}.")
        expect(math.isclose(got, expected, abs_tol=1e-5),
               f"{exercise}: with lengths {mask.sum(1).tolist()} you gave {got:.5f}, expected {expected:.5f}. "
               f"Hint: {hint}.")

    run_cases(exercise, student_fn, cases, hint, check, f"your term equals the package's form on all {len(cases)} "
              f"batches (unequal lengths, gates on the padding ignored).")


def _rationale_cases() -> list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]]:
    """(selected, gold, mask), (B, S) each: a selected pad and a sentence without gold that selects words."""
    t = torch.tensor
    return [
        (t([[1, 1, 0, 1], [0, 1, 1, 0], [1, 1, 0, 0]]), t([[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 0, 0]]),
         t([[1, 1, 1, 0], [1, 1, 1, 1], [1, 1, 1, 0]])),
        (t([[1, 0, 0], [0, 0, 1], [1, 1, 1]]), t([[1, 0, 0], [1, 0, 0], [0, 0, 0]]),
         t([[1, 1, 0], [1, 1, 1], [1, 1, 1]])),
        (t([[0, 1, 0, 0, 1]]), t([[0, 1, 0, 1, 0]]), t([[1, 1, 1, 1, 0]])),
    ]


def check_rationale_precision_recall(student_fn: Callable[..., tuple[float, float]]) -> None:
    """Check `student_fn(selected, gold, mask) -> (precision, recall)` ((B, S) bool each) against
    metrics.rationale_scores, without calling it. Introduced in notebook 08 (exercise: rationale metrics)."""
    from course_utils.metrics import rationale_scores
    exercise = "rationale_precision_recall"
    cases = [tuple(x.bool() for x in case) for case in _rationale_cases()]
    hint = ("keep the words only (selected & mask) of the sentences with a gold word (gold.any(dim=1)); precision "
            "= hits / selected, recall = hits / gold, with hits = (selected & gold).sum()")

    def check(case: tuple, got: object) -> None:
        selected, gold, mask = case
        expect(isinstance(got, (tuple, list)) and len(got) == 2 and all(_number(x) is not None for x in got),
               f"{exercise}: return two numbers (precision, recall), got {got!r}. Hint: {hint}.")
        precision, recall = (_number(x) for x in got)
        expected = rationale_scores(selected, gold, mask)
        everywhere = rationale_scores(selected, gold, torch.ones_like(mask))  # padding counted
        all_sentences = int((selected & gold & mask).sum()) / max(int((selected & mask).sum()), 1)
        close = math.isclose
        if close(precision, expected.recall, abs_tol=1e-6) and close(recall, expected.precision, abs_tol=1e-6) \
                and not close(expected.precision, expected.recall, abs_tol=1e-6):
            raise AssertionError(f"{exercise}: precision and recall are swapped. Hint: precision asks how much of "
                                 f"the SELECTION is gold, recall how much of the GOLD is selected.")
        if close(precision, everywhere.precision, abs_tol=1e-6) and not close(precision, expected.precision):
            raise AssertionError(f"{exercise}: you counted a selected <pad> position. Hint: selected & mask.")
        if close(precision, all_sentences, abs_tol=1e-6) and not close(precision, expected.precision):
            raise AssertionError(f"{exercise}: you counted the selections of sentences without a gold word. "
                                 f"Hint: {hint}.")
        expect(close(precision, expected.precision, abs_tol=1e-6) and close(recall, expected.recall, abs_tol=1e-6),
               f"{exercise}: you gave precision {precision:.4f}, recall {recall:.4f}; expected "
               f"{expected.precision:.4f}, {expected.recall:.4f}. Hint: {hint}.")

    run_cases(exercise, student_fn, cases, hint, check, f"your precision and recall equal metrics.rationale_scores "
              f"on all {len(cases)} cases (a selected pad and a sentence without gold included).", RATIONALE_FORBIDDEN)


def check_bag_of_words_logits(student_fn: Callable[..., torch.Tensor]) -> None:
    """Check `student_fn(words (B, S), mask (B, S), word_scores (V, C), bias (C,)) -> logits (B, C)`, counts (B, V)
    @ word_scores + bias, against BagOfWordsClassifier. Introduced in notebook 08 (exercise: a bag of words by hand)."""
    from course_utils.classifier import BagOfWordsClassifier
    exercise = "bag_of_words_logits"
    hint = ("count each word of each sentence (padding excluded: it is not a word), counts (B, V), then "
            "counts @ word_scores + bias; or sum word_scores[words] * mask[..., None] over the positions")
    generator = torch.Generator().manual_seed(3)
    model = BagOfWordsClassifier(9, num_classes=4)
    with torch.no_grad():
        model.word_scores.weight.copy_(torch.randn(9, 4, generator=generator))  # PAD's row is not zero here
        model.bias.copy_(torch.randn(4, generator=generator))
    words = torch.tensor([[4, 5, 4, 8], [6, 7, 0, 0], [3, 0, 0, 0]])  # (B, S): a repeated word, padding
    mask = words != 0
    args = (words, mask, model.word_scores.weight.detach(), model.bias.detach())
    if not attempted(exercise, call_student(exercise, student_fn, args, hint)):
        return
    got = call_student(exercise, student_fn, args, hint)
    expected = model(words, mask).logits.detach()  # (B, C)
    expect(isinstance(got, torch.Tensor) and tuple(got.shape) == (3, 4),
           f"{exercise}: expected logits of shape (B=3, C=4), got {shape_or_type(got)}. Hint: {hint}.")
    unmasked = model.word_scores.weight[words].sum(1).detach() + model.bias.detach()  # pads counted
    if torch.allclose(got.float(), unmasked, atol=1e-5):
        raise AssertionError(f"{exercise}: you counted the <pad> positions as words. Hint: {hint}.")
    if torch.allclose(got.float(), expected - model.bias.detach(), atol=1e-5):
        raise AssertionError(f"{exercise}: the bias is missing. Hint: {hint}.")
    expect(torch.allclose(got.float(), expected, atol=1e-5),
           f"{exercise}: you gave {got.tolist()}, expected {expected.tolist()}. Hint: {hint}.")
    passed(exercise, "your logits equal BagOfWordsClassifier's (a repeated word counted twice, padding not at all).")
