"""Shared fixtures: a tiny in-test corpus, small enough to read at a glance, in the tutorial's format.

    tiny_lines        the corpus as 'English<TAB>French' lines (42 lines; accents, apostrophes, digits,
                      a narrow no-break space, several translations of one French sentence, lines the
                      default filter drops for their prefix or length)
    tiny_corpus_path  the same lines written to tmp_path/eng-fra.txt
    tiny_pairs        the lines after read_pairs + filter_pairs with the course defaults (French -> English)
    tiny_course_data  CourseData made from tiny_pairs (seed 0): splits and train-only vocabularies
"""
from __future__ import annotations

import pytest

from course_utils import data
from course_utils.vocab import Vocab

TINY_CORPUS = """\
I am tired.\tJe suis fatigué.
I'm tired.\tJe suis fatigué.
I am tired.\tJe suis fatiguée.
I am cold.\tJ'ai froid.
I'm cold.\tJ'ai froid.
I am 20 years old.\tJ'ai 20 ans.
I am hungry!\tJ'ai faim !
I am not sure.\tJe n'en suis pas sûr.
I am at home.\tJe suis à la maison.
I'm a student.\tJe suis étudiant.
He is tall.\tIl est grand.
He's tall.\tIl est grand.
He is a teacher.\tIl est professeur.
He is reading.\tIl lit.
He is at home.\tIl est à la maison.
He's my friend.\tC'est mon ami.
She is happy.\tElle est heureuse.
She's happy.\tElle est contente.
She is my sister.\tC'est ma sœur.
She is cooking.\tElle cuisine.
She is at work.\tElle est au travail.
She's my friend.\tC'est mon amie.
You are late.\tVous êtes en retard.
You're late.\tTu es en retard.
You are right.\tTu as raison.
You are kind.\tVous êtes gentil.
You are kind.\tTu es gentil.
We are friends.\tNous sommes amis.
We're friends.\tNous sommes amies.
We are ready.\tNous sommes prêts.
We are busy.\tNous sommes occupés.
We're late.\tNous sommes en retard.
They are here.\tIls sont là.
They're here.\tElles sont là.
They are students.\tCe sont des étudiants.
They are asleep.\tIls dorment.
They're late.\tIls sont en retard.
Are you tired?\tEs-tu fatigué ?
Go.\tVa !
Run!\tCours\u202f!
Hurry, please!\tVite, s'il vous plaît !
I am very happy to see you again after all these years.\tJe suis très heureux de te revoir après toutes ces années.
"""


@pytest.fixture
def tiny_lines() -> list[str]:
    """The tiny corpus as 'English<TAB>French' lines."""
    return TINY_CORPUS.strip("\n").split("\n")


@pytest.fixture
def tiny_corpus_path(tmp_path, tiny_lines):
    """The tiny corpus as a bare tab-separated file, tmp_path/eng-fra.txt."""
    path = tmp_path / "eng-fra.txt"
    path.write_text("\n".join(tiny_lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def tiny_pairs(tiny_lines) -> list[data.Pair]:
    """Normalised, filtered (course defaults) pairs: Pair(source=French, target=English)."""
    return data.filter_pairs(data.read_pairs(tiny_lines))


@pytest.fixture
def tiny_course_data(tiny_pairs) -> data.CourseData:
    """Splits (seed 0) and train-only vocabularies of the tiny pairs."""
    return data.course_data_from_pairs(tiny_pairs, seed=0)


@pytest.fixture
def offline_and_private_data_dir(monkeypatch, tmp_path):
    """No network (course_utils.corpus.urlopen refuses) and a private, empty data folder ($COURSE_DATA_DIR): for
    tests of the corpus and data pipeline, which must never touch the repository's data/ or download anything."""
    from course_utils import corpus

    def refuse(*args, **kwargs):
        raise AssertionError("a test tried to use the network")
    monkeypatch.setattr(corpus, "urlopen", refuse)
    monkeypatch.setenv("COURSE_DATA_DIR", str(tmp_path / "data_dir"))


_CLASSIC_FRENCH = ["je suis fatigue .", "il est grand .", "nous sommes amis ."]
_CLASSIC_ENGLISH = ["i am tired .", "he is tall .", "we are friends ."]


@pytest.fixture(scope="module")
def tiny_ids():
    """For the classic recipe's tests: three (French ids, English ids) pairs, EOS-terminated, and the two
    vocabulary sizes."""
    src_vocab, tgt_vocab = Vocab.build(_CLASSIC_FRENCH), Vocab.build(_CLASSIC_ENGLISH)
    pairs = [(src_vocab.encode(f), tgt_vocab.encode(e)) for f, e in zip(_CLASSIC_FRENCH, _CLASSIC_ENGLISH, strict=True)]
    return pairs, len(src_vocab), len(tgt_vocab)
