"""The course's opening measurements: test BLEU by source length, and one example sentence picked by a rule.

    scores = bleu_by_source_length(result.rows)          # one BinScore per LENGTH_BINS bin: label, sentences, BLEU
    index, rule = pick_example(result.rows)              # the longest source translated exactly (a rule, not a choice)

Lengths are counted as the corpus filter counts them (`data.keep_pair`): tokens split on single spaces, punctuation
included ("je suis fatigue ." has 4), so every kept source has fewer than `vocab.MAX_LENGTH` of them.

Introduced in notebook 00.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

from course_utils.evaluate import SentenceRow
from course_utils.metrics import corpus_scores
from course_utils.vocab import MAX_LENGTH

__all__ = ["LENGTH_BINS", "BinScore", "source_length", "bleu_by_source_length", "pick_example"]

# Source-length bins (low, high), both ends included, covering 1 .. MAX_LENGTH - 1: the filter keeps sources of
# fewer than MAX_LENGTH tokens and almost none of under 4, so the first bin is wider (about as full as the others).
LENGTH_BINS = ((1, 4), (5, 6), (7, MAX_LENGTH - 2), (MAX_LENGTH - 1, MAX_LENGTH - 1))


class BinScore(NamedTuple):
    """Corpus BLEU of the sentences whose source length lies in low..high (both included).

    label: "5-6" (or "9" for a one-length bin); sentences: how many rows fell in the bin; bleu: sacreBLEU corpus
    BLEU of those rows, nan for an empty bin. Introduced in notebook 00."""

    label: str
    low: int
    high: int
    sentences: int
    bleu: float


def source_length(sentence: str) -> int:
    """Tokens of a normalised sentence, counted like the corpus filter: split on single spaces, punctuation
    included. Introduced in notebook 00."""
    return len(sentence.split(" "))


def bleu_by_source_length(rows: Sequence[SentenceRow],
                          bins: Sequence[tuple[int, int]] = LENGTH_BINS) -> list[BinScore]:
    """Corpus BLEU per source-length bin of evaluation rows (`evaluate(...).rows`: source, reference, hypothesis).

    `bins`: (low, high) pairs, both ends included, not overlapping. Every row must fall in exactly one bin, else a
    ValueError names the length and the fix. Returns one BinScore per bin, in the order given (BLEU nan when a bin
    is empty). Introduced in notebook 00."""
    bins = [(int(low), int(high)) for low, high in bins]
    if not bins or any(low > high for low, high in bins):
        raise ValueError(f"bins must be a non-empty list of (low, high) with low <= high, got {bins}")
    groups: list[list[SentenceRow]] = [[] for _ in bins]
    for row in rows:
        length = source_length(row.source)
        hits = [i for i, (low, high) in enumerate(bins) if low <= length <= high]
        if len(hits) != 1:
            raise ValueError(f"a source of {length} tokens falls in {len(hits)} of the bins {bins}; pass bins that "
                             f"cover every length exactly once (LENGTH_BINS does)")
        groups[hits[0]].append(row)
    scores = []
    for (low, high), group in zip(bins, groups):
        bleu = corpus_scores([r.hypothesis for r in group], [r.reference for r in group]).bleu if group else math.nan
        scores.append(BinScore(f"{low}-{high}" if high > low else f"{low}", low, high, len(group), bleu))
    return scores


def pick_example(rows: Sequence[SentenceRow]) -> tuple[int, str]:
    """The example sentence, by a rule: the longest source whose hypothesis equals the reference (ties: the first
    in row order); when no row is exact (a smoke-test model), the longest source.

    Returns (row index, the rule that picked it, as a phrase). Raises ValueError for no rows.
    Introduced in notebook 00."""
    if not rows:
        raise ValueError("pick_example got no rows; pass evaluate(...).rows of a non-empty split")
    exact = [i for i, row in enumerate(rows) if row.hypothesis == row.reference]
    candidates, rule = (exact, "the longest test source translated exactly") if exact else (
        range(len(rows)), "no test source is translated exactly: the longest test source")
    best = max(candidates, key=lambda i: (source_length(rows[i].source), -i))
    return best, rule
