"""Opening measurements: test BLEU by source length, an example sentence picked by a rule. Introduced in notebook 00."""
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
    """Corpus BLEU of the sentences whose source length lies in low..high (both included). Introduced in notebook 00."""

    label: str  # "5-6", or "9" for a one-length bin
    low: int
    high: int
    sentences: int  # rows in the bin
    bleu: float  # sacreBLEU corpus BLEU of those rows; nan for an empty bin


def source_length(sentence: str) -> int:
    """Tokens of a normalised sentence counted like the corpus filter (`data.keep_pair`): split on single spaces,
    punctuation included ("je suis fatigue ." has 4). Introduced in notebook 00."""
    return len(sentence.split(" "))


def bleu_by_source_length(rows: Sequence[SentenceRow], bins: Sequence[tuple[int, int]] = LENGTH_BINS) -> list[BinScore]:
    """Corpus BLEU of `evaluate(...).rows` per (low, high) source-length bin, ends included, in the order given.
    Raises ValueError unless every row falls in exactly one bin. Introduced in notebook 00."""
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
    bleus = [corpus_scores([r.hypothesis for r in g], [r.reference for r in g]).bleu if g else math.nan for g in groups]
    return [BinScore(f"{low}-{high}" if high > low else f"{low}", low, high, len(group), bleu)
            for (low, high), group, bleu in zip(bins, groups, bleus)]


def pick_example(rows: Sequence[SentenceRow]) -> tuple[int, str]:
    """(row index, the rule as a phrase): the longest source whose hypothesis equals the reference (ties: the first),
    else the longest source. Raises ValueError for no rows. Introduced in notebook 00."""
    if not rows:
        raise ValueError("pick_example got no rows; pass evaluate(...).rows of a non-empty split")
    exact = [i for i, row in enumerate(rows) if row.hypothesis == row.reference]
    candidates, rule = (exact, "the longest test source translated exactly") if exact else (
        range(len(rows)), "no test source is translated exactly: the longest test source")
    return max(candidates, key=lambda i: (source_length(rows[i].source), -i)), rule
