"""A corpus the course has never seen: the real corpus with a seeded seventh of its lines dropped, repackaged in the
tutorial's layout (a zip holding data/eng-fra.txt). The pipeline must work on it, check_corpus must call it "not a
known corpus", and the general invariants of tests/test_real_corpus.py must hold.

The same corpus, by hand, for running the notebooks on it (see README, "Testing"):
    python tests/test_derived_corpus.py /tmp/derived-eng-fra.zip
    COURSE_CORPUS=/tmp/derived-eng-fra.zip COURSE_DATA_DIR=/tmp/derived-data COURSE_FAST=1 \
        python -m pytest notebooks --nbval-lax --nbval-sanitize-with tests/nbval_sanitize.cfg
"""
from __future__ import annotations

import random
import sys
import zipfile
from pathlib import Path

import pytest
from test_real_corpus import check_general_invariants, course_corpus_path

from course_utils import corpus, data

DROP_SHARE = 1 / 7  # of the lines, chosen at random with DROP_SEED
DROP_SEED = 7


def write_derived_corpus(source: Path, target: Path, share: float = DROP_SHARE, seed: int = DROP_SEED) -> int:
    """Write `source`'s lines, less a seeded `share` of them, as `target` (a zip with data/eng-fra.txt, the
    tutorial's layout). Returns the number of lines written."""
    rng = random.Random(seed)
    kept = [line for line in corpus.read_corpus_lines(source) if rng.random() >= share]
    target.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(target, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("data/eng-fra.txt", "\n".join(kept) + "\n")
    return len(kept)


@pytest.fixture(scope="module")
def derived(tmp_path_factory):
    source = course_corpus_path()
    target = tmp_path_factory.mktemp("derived") / "data.zip"
    return corpus.check_corpus(source), target, write_derived_corpus(source, target)


def test_a_derived_corpus_is_valid_but_not_known(derived):
    source_info, path, written = derived
    info = corpus.check_corpus(path)
    assert (info.member, info.lines, info.known) == ("data/eng-fra.txt", written, None)
    assert 0.8 * source_info.lines < info.lines < 0.9 * source_info.lines
    assert "not a known corpus" in str(info)


def test_the_pipeline_keeps_its_invariants_on_a_derived_corpus(derived, monkeypatch):
    source_info, path, written = derived
    monkeypatch.setenv(corpus._CORPUS_ENV, str(path))
    course = data.load_course_data(log=None)  # found through $COURSE_CORPUS, as the notebooks find it
    assert course.corpus_path == path and course.lines_read == written
    check_general_invariants(course)
    if source_info.known == corpus.MIRROR_CORPUS:  # other counts than the mirror's, so nothing can pass by luck
        assert len(course.pairs) != 10_922 and [len(part) for part in course.splits] != [8_750, 1_091, 1_081]


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(f"usage: python {sys.argv[0]} TARGET.zip   (derives it from the corpus the course finds)")
    print(f"{write_derived_corpus(course_corpus_path(), Path(sys.argv[1])):,} lines written to {sys.argv[1]}")
