"""Notebook 08's checkers: the typical mistakes get their hint, and the cases are tricky enough."""
from __future__ import annotations

import torch

from course_utils import exercises
from course_utils.exercises import nb08_attention_classification as nb08
from course_utils.exercises import solutions


def precision_recall(selected, gold, mask, use_mask=True, only_gold=True, swap=False):
    """The rationale precision and recall; the keyword arguments switch on the usual mistakes."""
    chosen = selected & (mask if use_mask else torch.ones_like(mask)) & (gold.any(1, keepdim=True) if only_gold
                                                                           else torch.ones_like(mask))
    hits = (chosen & gold).sum().item()
    precision, recall = hits / max(chosen.sum().item(), 1), hits / max(gold.sum().item(), 1)
    return (recall, precision) if swap else (precision, recall)


def bow_unmasked(words, mask, word_scores, bias):
    return word_scores[words].sum(1) + bias  # (B, S, C) -> (B, C): pads counted


MISTAKES = [  # checker, typical wrong solution, a word of the expected hint
    (exercises.check_sparsity, lambda gates, mask: gates.mean(), "padding included"),
    (exercises.check_sparsity, lambda gates, mask: gates.masked_fill(mask, 0.0).mean(), "masked_fill"),
    (exercises.check_sparsity, lambda gates, mask: (gates * mask).mean(), "B \\* S"),
    (exercises.check_sparsity, lambda gates, mask: (gates * mask).sum() / mask.sum(), "not per sentence"),
    (exercises.check_sparsity, lambda gates, mask: (gates * mask).sum(1) / mask.sum(1), "one number"),
    (exercises.check_sparsity, lambda gates, mask: (gates * mask).sum(0).mean(), "expected"),
    (exercises.check_rationale_precision_recall, lambda s, g, m: precision_recall(s, g, m, swap=True), "swapped"),
    (exercises.check_rationale_precision_recall, lambda s, g, m: precision_recall(s, g, m, use_mask=False), "<pad>"),
    (exercises.check_rationale_precision_recall, lambda s, g, m: precision_recall(s, g, m, only_gold=False),
     "without a gold word"),
    (exercises.check_rationale_precision_recall, lambda s, g, m: precision_recall(s, g, m)[0], "two numbers"),
    (exercises.check_bag_of_words_logits, bow_unmasked, "<pad>"),
    (exercises.check_bag_of_words_logits, lambda w, m, ws, b: solutions.bag_of_words_logits(w, m, ws, b) - b, "bias"),
    (exercises.check_bag_of_words_logits, lambda w, m, ws, b: solutions.bag_of_words_logits(w, m, ws, b).T, "shape"),
    (exercises.check_bag_of_words_logits, lambda w, m, ws, b: ws[w[:, 0]] + b, "expected"),  # first word only
]


def test_the_sparsity_cases_separate_the_mistakes():
    for gates, mask in nb08._sparsity_cases():
        assert (~mask).any(dim=1).all() and (gates[~mask] > 0).all()  # every row has padding, with gates on it
    assert any(len(set(lengths)) > 1 for lengths in nb08.SPARSITY_LENGTHS)  # unequal: per sentence != per word


def test_the_rationale_cases_have_a_selected_pad_and_a_sentence_without_gold():
    cases = [tuple(x.bool() for x in case) for case in nb08._rationale_cases()]
    assert any((s & ~m).any() for s, _, m in cases)
    assert any(((~g.any(1)) & (s & m).any(1)).any() for s, g, m in cases)
