"""overview: BLEU per source-length bin of evaluation rows, and the example sentence picked by a rule."""
import math

import pytest

from course_utils.evaluate import SentenceRow
from course_utils.metrics import corpus_scores
from course_utils.overview import LENGTH_BINS, bleu_by_source_length, pick_example, source_length
from course_utils.vocab import MAX_LENGTH

ROWS = [
    SentenceRow("je suis fatigue .", "i m tired .", "i m tired ."),                      # 4 tokens, exact
    SentenceRow("il est tres grand .", "he s very tall .", "he s very big ."),          # 5
    SentenceRow("nous sommes tous ici .", "we re all here .", "we re all here ."),      # 5, exact
    SentenceRow("je suis en train de manger .", "i m eating .", "i m eating ."),        # 7, exact
    SentenceRow("elle est plus grande que moi .", "she s taller than me .", "she s tall ."),  # 7
]


def test_lengths_are_counted_like_the_corpus_filter():
    assert source_length("je suis fatigue .") == 4  # punctuation is a token
    assert [source_length(row.source) for row in ROWS] == [4, 5, 5, 7, 7]


def test_the_default_bins_cover_every_length_the_filter_keeps_exactly_once():
    covered = [n for low, high in LENGTH_BINS for n in range(low, high + 1)]
    assert covered == list(range(1, MAX_LENGTH))


def test_each_bin_is_the_corpus_bleu_of_its_rows():
    scores = bleu_by_source_length(ROWS)
    assert [s.label for s in scores] == ["1-4", "5-6", "7-8", "9"]
    assert [s.sentences for s in scores] == [1, 2, 2, 0]
    assert scores[0].bleu == pytest.approx(100.0)
    assert scores[1].bleu == pytest.approx(corpus_scores([r.hypothesis for r in ROWS[1:3]],
                                                         [r.reference for r in ROWS[1:3]]).bleu)
    assert 0 < scores[2].bleu < 100 and math.isnan(scores[3].bleu)  # an empty bin is nan, not an error


def test_bins_that_miss_a_length_or_overlap_are_refused():
    with pytest.raises(ValueError, match="a source of 7 tokens falls in 0 of the bins"):
        bleu_by_source_length(ROWS, [(1, 6)])
    with pytest.raises(ValueError, match="falls in 2 of the bins"):
        bleu_by_source_length(ROWS, [(1, 5), (5, 9)])
    with pytest.raises(ValueError, match="low <= high"):
        bleu_by_source_length(ROWS, [(6, 1)])


def test_the_example_is_the_longest_exact_translation_else_the_longest_source():
    index, rule = pick_example(ROWS)
    assert index == 3 and "exactly" in rule  # 7 tokens and exact; row 4 is as long but wrong
    wrong = [row._replace(hypothesis="no .") for row in ROWS]
    index, rule = pick_example(wrong)
    assert index == 3 and rule.startswith("no test source")  # ties go to the first row
    with pytest.raises(ValueError, match="no rows"):
        pick_example([])
