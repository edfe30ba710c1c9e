"""Checkers of notebook 01's exercises: normalisation, encoding with <unk>, the pad fraction of a batch."""
from __future__ import annotations

import math
from collections.abc import Callable

import torch

from course_utils import data
from course_utils.exercises.contract import expect, run_cases
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
    """Check `student_fn(s) -> str` against `data.normalize_string` on tricky strings, without calling it.
    Introduced in notebook 01 (exercise: write your own normalisation)."""
    exercise = "normalize"
    hint = ("lower case, accents dropped (unicode_to_ascii), a space before . ! ?, every run of other "
            "non-letters replaced by ONE space, ends stripped; write it without calling data.normalize_string")

    def check(raw: str, got: object) -> None:
        expected = data.normalize_string(raw)
        why = ("it matches the anchored-regex bug: the cleaning regex must not start with '^', so that it "
               "cleans the whole string" if got == data.normalize_string_anchored(raw) != expected else hint)
        expect(got == expected, f"normalize({raw!r}) returned {got!r}, expected {expected!r}. Hint: {why}.")

    run_cases(exercise, student_fn, NORMALIZE_CASES, hint, check, f"your function agrees with normalize_string on "
              f"all {len(NORMALIZE_CASES)} tricky strings.", NORMALIZE_FORBIDDEN, args=lambda raw: (raw,))


ENCODE_VOCAB_SENTENCES = ("je suis fatigue .", "il est grand .", "je suis grand !", "tu es en retard .")
ENCODE_CASES = ("je suis fatigue .", "il est petit .", "nous sommes en retard !", "", "je")


def check_encode(student_fn: Callable[[Vocab, str], list[int]]) -> None:
    """Check `student_fn(vocab, sentence) -> list[int]` against `Vocab.encode` on a small vocabulary.
    Introduced in notebook 01 (exercise: encode with <unk>)."""
    exercise = "encode"
    vocab = Vocab.build(ENCODE_VOCAB_SENTENCES, name="fra")
    hint = "one id per word (split on ' '), unknown words -> UNK_ID, then EOS_ID"

    def student(vocab: Vocab, sentence: str) -> object:
        try:
            return student_fn(vocab, sentence)
        except KeyError as error:
            raise AssertionError(f"encode(vocab, {sentence!r}) raised KeyError {error}. Hint: unknown words "
                                 f"must become UNK_ID ({UNK_ID}): use vocab.word2index.get(word, "
                                 f"UNK_ID).") from error

    def check(sentence: str, got: object) -> None:
        expected = vocab.encode(sentence)
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

    run_cases(exercise, student, ENCODE_CASES, hint, check, f"your function agrees with Vocab.encode on all "
              f"{len(ENCODE_CASES)} sentences, unknown words and the empty sentence included.",
              args=lambda sentence: (vocab, sentence))


PAD_FRACTION_SOURCES = (("je suis fatigue .", "il est grand .", "je"),   # ragged: some padding
                        ("je suis grand !", "tu es en retard ."),         # ragged
                        ("je suis fatigue .", "je suis grand !"))         # same lengths: no padding at all


def check_pad_fraction(student_fn: Callable[[data.Batch], float]) -> None:
    """Check `student_fn(batch) -> float`, the fraction of the positions of batch.src (B, S) that are <pad>.
    Introduced in notebook 01 (exercise: pad fraction)."""
    exercise = "pad_fraction"
    vocab = Vocab.build(ENCODE_VOCAB_SENTENCES)
    batches = [data.collate_batch([(torch.tensor(vocab.encode(s)), torch.tensor(vocab.encode(s))) for s in group])
               for group in PAD_FRACTION_SOURCES]
    hint = "count the <pad> positions of batch.src and divide by ALL its positions, B * S"

    def check(batch: data.Batch, got: object) -> None:
        expected = (~batch.src_mask).sum().item() / batch.src_mask.numel()  # pads / (B * S)
        expect(isinstance(got, (float, int, torch.Tensor)) and torch.as_tensor(got).numel() == 1,
               f"pad_fraction returned {got!r}; expected one number (a float between 0 and 1).")
        expect(math.isclose(float(got), expected, abs_tol=1e-6),
               f"pad_fraction of a batch with src lengths {batch.src_lengths.tolist()} and src shape "
               f"{tuple(batch.src.shape)} returned {float(got):.4f}, expected {expected:.4f}. Hint: {hint}.")

    run_cases(exercise, student_fn, batches, hint, check,
              f"right on all {len(batches)} batches, including one without padding.", args=lambda batch: (batch,))
