"""The corpus the course really runs on: $COURSE_CORPUS (CI sets it to the offline mirror), else the usual search.

Any valid corpus passes: the general invariants run on every corpus; the exact counts only on the known offline
mirror (manythings 2017-09-29), and are skipped with a one-line reason on another corpus (e.g. the tutorial's
data.zip, or a corpus derived from the mirror as tests/test_derived_corpus.py does).
"""
import re
from pathlib import Path

import pytest

from course_utils import corpus, data
from course_utils.vocab import Vocab

CLEAN = re.compile(r"[a-z.!?]+( [a-z.!?]+)*")  # what a correctly normalised, non-empty sentence looks like


def course_corpus_path() -> Path:
    """$COURSE_CORPUS, else data/eng-fra.txt (no download); a one-line pytest.fail with the fix when neither."""
    try:
        return corpus.find_corpus(download=False)
    except corpus.CorpusError as error:
        pytest.fail(f"{error} (CI sets COURSE_CORPUS to the offline mirror; "
                    f"`python -m course_utils data check` downloads the tutorial's corpus)", pytrace=False)


def check_general_invariants(course: data.CourseData) -> None:
    """What must hold on any corpus: non-empty splits that partition the kept pairs, no French sentence in two
    splits, clean normalisation, train-only vocabularies that cover every training word."""
    assert course.lines_read >= len(course.pairs) > 0
    assert all(len(part) > 0 for part in course.splits), [len(part) for part in course.splits]
    assert sorted(course.splits.train + course.splits.dev + course.splits.test) == sorted(course.pairs)
    sources = [{pair.source for pair in part} for part in course.splits]
    assert not (sources[0] & sources[1] or sources[0] & sources[2] or sources[1] & sources[2]), "leak between splits"
    assert all(CLEAN.fullmatch(side) for pair in course.pairs for side in pair)
    assert all(data.keep_pair(pair) for pair in course.pairs)
    assert all(not course.src_vocab.unknown_words(pair.source) for pair in course.splits.train)
    assert all(not course.tgt_vocab.unknown_words(pair.target) for pair in course.splits.train)


@pytest.fixture(scope="module")
def real_course():
    path = course_corpus_path()
    return corpus.check_corpus(path), data.load_course_data(path=path, log=None)


def test_real_corpus_general_invariants(real_course):
    info, course = real_course
    assert info.lines == course.lines_read
    check_general_invariants(course)


def test_real_corpus_mirror_counts(real_course):
    """The offline mirror's exact counts (the numbers the notebooks' text quotes)."""
    info, course = real_course
    if info.known != corpus.MIRROR_CORPUS:
        pytest.skip(f"exact counts are checked on the offline mirror only; this corpus is "
                    f"{info.known.description if info.known else 'not a known corpus'} ({info.lines:,} lines)")
    assert (course.lines_read, len(course.pairs)) == (142_787, 10_922)
    assert [len(part) for part in course.splits] == [8_750, 1_091, 1_081]
    assert (len(course.src_vocab), len(course.tgt_vocab)) == (4_024, 2_636)  # train only, 4 special tokens
    assert (len(Vocab.build(p.source for p in course.pairs)), len(Vocab.build(p.target for p in course.pairs))) \
        == (4_416, 2_845)
