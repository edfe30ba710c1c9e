"""The corpus the course really runs on: the offline mirror named by $COURSE_CORPUS (CI sets it).

Issue 10 makes this corpus-aware: exact counts on the known mirror, the general invariants on any corpus.
"""
import os
import re
from pathlib import Path

import pytest

from course_utils import corpus, data
from course_utils.vocab import Vocab

CLEAN = re.compile(r"[a-z.!?]+( [a-z.!?]+)*")  # what a correctly normalised, non-empty sentence looks like


def test_real_corpus_mirror():
    """The offline mirror (manythings 2017-09-29) named by $COURSE_CORPUS; CI sets it."""
    named = os.environ.get("COURSE_CORPUS")
    if not named:
        pytest.fail("COURSE_CORPUS is not set: point it to the offline mirror, e.g. "
                    "COURSE_CORPUS=../shared/data/fra-eng-2017-09-29.zip (see data/README.md).")
    assert corpus.check_corpus(named).known == corpus.MIRROR_CORPUS
    course = data.load_course_data(verbose=False)
    assert course.corpus_path == Path(named)
    assert (course.lines_read, len(course.pairs)) == (142_787, 10_922)
    assert [len(part) for part in course.splits] == [8_750, 1_091, 1_081]
    assert (len(course.src_vocab), len(course.tgt_vocab)) == (4_024, 2_636)  # train only, 4 special tokens
    assert (len(Vocab.build(p.source for p in course.pairs)), len(Vocab.build(p.target for p in course.pairs))) \
        == (4_416, 2_845)
    train_sources = {p.source for p in course.splits.train}
    assert not train_sources & {p.source for p in course.splits.dev + course.splits.test}
    assert all(CLEAN.fullmatch(side) for pair in course.pairs for side in pair)
