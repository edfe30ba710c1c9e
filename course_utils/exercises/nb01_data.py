"""Checkers of notebook 01's exercises: normalisation, encoding with <unk>, the pad fraction of a batch.

NORMALIZE_CASES, ENCODE_VOCAB_SENTENCES, ENCODE_CASES and PAD_FRACTION_SOURCES are their cases.
Introduced in notebook 01.
"""
from __future__ import annotations

import math
from collections.abc import Callable

import torch

from course_utils import data
from course_utils.exercises.contract import attempted, call_student, expect, passed
from course_utils.vocab import EOS_ID, UNK_ID, Vocab

NORMALIZE_CASES = (
    "Va, vite !",                 # a comma in the middle
    "J'ai 20 ans.",               # apostrophe and digits in the middle
    "Ça alors\u202f!",            # accent, and a narrow no-break space before '!'
    "  Hé, toi -- 3 fois!!  ",    # outer spaces, dashes, a digit, repeated '!'
    "C'est l'été.",               # two apostrophes, accents
    "«Non», dit-il…",             # guillemets, hyphen, ellipsis character
    "cœur",                       # 'œ' has no decomposition: it becomes a space
    "Tom's 2nd car.",             # English: apostrophe, digit glued to letters
    "Qu'est-ce que c'est ?",
    "I'M COLD.",
)
NORMALIZE_FORBIDDEN = ("course_utils.data.normalize_string", "course_utils.data.normalize_string_anchored")


def check_normalize(student_fn: Callable[[str], str]) -> None:
    """Check `student_fn(s) -> str` against `data.normalize_string` on tricky strings; calling
    data.normalize_string or data.normalize_string_anchored from the student's function fails the check.

    Introduced in notebook 01 (exercise: write your own normalisation).
    """
    exercise = "normalize"
    hint = ("lower case, accents dropped (unicode_to_ascii), a space before . ! ?, every run of other "
            "non-letters replaced by ONE space, ends stripped; write it without calling data.normalize_string")

    def call(raw: str) -> object:
        return call_student(exercise, student_fn, (raw,), hint, forbidden=NORMALIZE_FORBIDDEN)

    if not attempted(exercise, call(NORMALIZE_CASES[0])):
        return
    for raw in NORMALIZE_CASES:
        got, expected = call(raw), data.normalize_string(raw)
        why = ("it matches the anchored-regex bug: the cleaning regex must not start with '^', so that it "
               "cleans the whole string" if got == data.normalize_string_anchored(raw) != expected else hint)
        expect(got == expected, f"normalize({raw!r}) returned {got!r}, expected {expected!r}. Hint: {why}.")
    passed(exercise, f"your function agrees with normalize_string on all {len(NORMALIZE_CASES)} tricky strings.")


ENCODE_VOCAB_SENTENCES = ("je suis fatigue .", "il est grand .", "je suis grand !", "tu es en retard .")
ENCODE_CASES = ("je suis fatigue .", "il est petit .", "nous sommes en retard !", "", "je")


def check_encode(student_fn: Callable[[Vocab, str], list[int]]) -> None:
    """Check `student_fn(vocab, sentence) -> list[int]` against `Vocab.encode(sentence)` (EOS appended,
    unknown words -> UNK_ID) on a small vocabulary. Introduced in notebook 01 (exercise: encode with <unk>).
    """
    exercise = "encode"
    vocab = Vocab.build(ENCODE_VOCAB_SENTENCES, name="fra")
    hint = "one id per word (split on ' '), unknown words -> UNK_ID, then EOS_ID"

    def call(sentence: str) -> object:
        try:
            return call_student(exercise, student_fn, (vocab, sentence), hint)
        except KeyError as error:
            raise AssertionError(f"encode(vocab, {sentence!r}) raised KeyError {error}. Hint: unknown words "
                                 f"must become UNK_ID ({UNK_ID}): use vocab.word2index.get(word, "
                                 f"UNK_ID).") from error

    if not attempted(exercise, call(ENCODE_CASES[0])):
        return
    for sentence in ENCODE_CASES:
        got, expected = call(sentence), vocab.encode(sentence)
        if isinstance(got, torch.Tensor):
            got = got.tolist()
        if not got or got[-1] != EOS_ID:
            why = "every sentence ends with EOS_ID"
        elif sentence == "":  # "".split(" ") is [""]: one empty word, an <unk>
            why = ("the empty sentence has no words, but ''.split(' ') returns [''] (one empty word, an <unk>): "
                   "use sentence.split(), or handle '' on its own, then append EOS_ID")
        else:
            why = hint
        expect(list(got) == expected, f"encode(vocab, {sentence!r}) returned {got!r}, expected {expected!r}. "
                                      f"Hint: {why}.")
    passed(exercise, f"your function agrees with Vocab.encode on all {len(ENCODE_CASES)} sentences, "
                     f"unknown words and the empty sentence included.")


PAD_FRACTION_SOURCES = (("je suis fatigue .", "il est grand .", "je"),   # ragged: some padding
                        ("je suis grand !", "tu es en retard ."),         # ragged
                        ("je suis fatigue .", "je suis grand !"))         # same lengths: no padding at all


def check_pad_fraction(student_fn: Callable[[data.Batch], float]) -> None:
    """Check `student_fn(batch) -> float`, the fraction of the positions of batch.src (B, S) that are <pad>,
    on a few small batches (one without any padding). Introduced in notebook 01 (exercise: pad fraction).
    """
    exercise = "pad_fraction"
    vocab = Vocab.build(ENCODE_VOCAB_SENTENCES)
    batches = [data.collate_batch([(torch.tensor(vocab.encode(s)), torch.tensor(vocab.encode(s))) for s in group])
               for group in PAD_FRACTION_SOURCES]
    hint = "count the <pad> positions of batch.src and divide by ALL its positions, B * S"
    if not attempted(exercise, call_student(exercise, student_fn, (batches[0],), hint)):
        return
    for batch in batches:
        got = call_student(exercise, student_fn, (batch,), hint)
        expected = (~batch.src_mask).sum().item() / batch.src_mask.numel()  # pads / (B * S)
        expect(isinstance(got, (float, int, torch.Tensor)) and torch.as_tensor(got).numel() == 1,
               f"pad_fraction returned {got!r}; expected one number (a float between 0 and 1).")
        expect(math.isclose(float(got), expected, abs_tol=1e-6),
               f"pad_fraction of a batch with src lengths {batch.src_lengths.tolist()} and src shape "
               f"{tuple(batch.src.shape)} returned {float(got):.4f}, expected {expected:.4f}. Hint: {hint}.")
    passed(exercise, f"right on all {len(batches)} batches, including one without padding.")
