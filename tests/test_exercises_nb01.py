"""Notebook 01's checkers: the typical mistakes get their hint, and the cases are tricky enough."""
from __future__ import annotations

import re

import torch

from course_utils import data, exercises
from course_utils.exercises import solutions
from course_utils.vocab import EOS_ID, PAD_ID, Vocab

MISTAKES = [  # checker, typical wrong solution, a word of the expected hint
    (exercises.check_normalize, data.normalize_string_anchored, "anchored-regex bug"),  # its own reference
    (exercises.check_normalize, lambda s: data.unicode_to_ascii(s.lower()), "space before"),  # no cleaning at all
    (exercises.check_normalize, lambda s: re.sub(r"[^a-z.!?]+", " ", re.sub(r"([.!?])", r" \1", s.lower())).strip(),
     "accents"),
    (exercises.check_encode, lambda vocab, sentence: [vocab.word2index[w] for w in sentence.split()] + [EOS_ID],
     "UNK_ID"),
    (exercises.check_encode, lambda vocab, sentence: [vocab[w] for w in sentence.split()], "ends with EOS_ID"),
    # "".split(" ") is [""]: the empty sentence gets an <unk>; the hint must not recommend that very split
    (exercises.check_encode, lambda vocab, sentence: [vocab[w] for w in sentence.split(" ")] + [EOS_ID],
     "empty sentence has no words"),
    (exercises.check_pad_fraction, lambda batch: (batch.src == PAD_ID).sum().item() / batch.src.size(0),
     "B \\* S"),  # per row
    (exercises.check_pad_fraction, lambda batch: (batch.src == PAD_ID).sum().item(), "B \\* S"),  # a count
    (exercises.check_pad_fraction, lambda batch: batch.src_mask.float().mean().item(), "B \\* S"),  # real fraction
    (exercises.check_pad_fraction, lambda batch: [0.5], "one number"),
    (exercises.check_pad_fraction, lambda batch: batch.src_lengths.sum() / batch.src.shape[2], "B \\* S"),  # IndexError
]


def test_pad_fraction_checker_accepts_a_tensor_result(capsys):
    exercises.check_pad_fraction(lambda batch: (~batch.src_mask).float().mean())
    assert "correct!" in capsys.readouterr().out


def test_checker_cases_are_really_tricky():
    """The cases must tell the bug from the fix, and the batches must include a no-padding one."""
    assert any(data.normalize_string(s) != data.normalize_string_anchored(s) for s in exercises.NORMALIZE_CASES)
    vocab = Vocab.build(exercises.ENCODE_VOCAB_SENTENCES)
    assert any(vocab.unknown_words(s) for s in exercises.ENCODE_CASES) and "" in exercises.ENCODE_CASES
    lengths = [{len(s.split(" ")) for s in group} for group in exercises.PAD_FRACTION_SOURCES]
    assert any(len(group) == 1 for group in lengths) and any(len(group) > 1 for group in lengths)
    assert torch.equal(torch.tensor(vocab.encode("je suis")), torch.tensor(solutions.encode(vocab, "je suis")))
