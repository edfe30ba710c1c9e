"""course_utils.alignment: the toy task's gold links, AER by hand, links from a weight matrix, IBM Model 1 by hand."""
import random

import pytest
import torch

from course_utils import alignment
from course_utils.alignment import (
    AlignedPair,
    _ibm1_links,
    _threshold_links,
    aer,
    argmax_links,
    corpus_aer,
    ibm_model1,
    shifted_rows,
    word_block,
)
from course_utils.data import Pair


# ---------------------------------------------------------------------------------------------- the toy task
def test_toy_pairs_are_distinct_seeded_and_their_links_point_inside_the_sentences():
    pairs = alignment.toy_pairs(300, seed=1)
    assert pairs == alignment.toy_pairs(300, seed=1) and pairs != alignment.toy_pairs(300, seed=2)
    assert len({p.source for p in pairs}) == 300
    for p in pairs:
        assert p.sure <= p.possible
        T, S = len(p.target.split()), len(p.source.split())
        assert all(0 <= t < T and 0 <= s < S for t, s in p.possible)


def test_the_toy_grammar_reorders_adjectives_and_links_ne_pas_and_does_as_documented():
    pairs = alignment.toy_pairs(2000, seed=0)
    red = next(p for p in pairs if p.source.startswith("la voiture rouge "))
    assert red.target.startswith("the red car ") and {(1, 2), (2, 1)} <= red.sure  # red-rouge, car-voiture
    small = next(p for p in pairs if p.source.startswith("le petit chat "))
    assert small.target.startswith("the small cat ") and {(1, 1), (2, 2)} <= small.sure
    neg = next(p for p in pairs if " ne voit pas " in p.source)
    fr, en = neg.source.split(), neg.target.split()
    ne, pas, voit, does, not_ = fr.index("ne"), fr.index("pas"), fr.index("voit"), en.index("does"), en.index("not")
    assert (not_, pas) in neg.sure and (not_, ne) in neg.possible - neg.sure
    assert (does, voit) in neg.possible - neg.sure and not any(t == does for t, _ in neg.sure)  # inserted
    reflexive = next(p for p in pairs if " se " in p.source)
    se = reflexive.source.split().index("se")
    assert not any(s == se for _, s in reflexive.possible)  # deleted: no link at all
    future = next(p for p in pairs if " verra " in p.source and " ne " not in p.source)
    v, en = future.source.split().index("verra"), future.target.split()
    assert {(en.index("will"), v), (en.index("see"), v)} <= future.sure  # one French word, two English words


def test_toy_course_data_splits_the_pairs_and_gold_by_pair_finds_every_test_pair():
    gold = alignment.toy_pairs(500, seed=0)
    data = alignment.toy_course_data(gold, seed=0)
    lookup = alignment.gold_by_pair(gold)
    assert len(data.splits.train) + len(data.splits.dev) + len(data.splits.test) == 500
    assert all(isinstance(p, Pair) and p in lookup for p in data.splits.test)


# ---------------------------------------------------------------------------------------------- AER
def test_aer_of_a_hand_computed_case():
    sure = {(0, 0), (1, 2)}
    possible = sure | {(1, 1)}
    predicted = {(0, 0), (1, 1), (2, 2)}
    # |A∩S| = 1, |A∩P| = 2, |A| = 3, |S| = 2: AER = 1 - (1 + 2) / (3 + 2) = 0.4
    assert aer(predicted, sure, possible) == pytest.approx(0.4)
    assert aer(sure, sure, possible) == 0.0  # every sure link and nothing else: perfect
    assert aer(possible, sure, possible) == 0.0  # possible links are not punished
    scores = corpus_aer([predicted], [AlignedPair("a b c", "x y z", frozenset(sure), frozenset(possible))])
    assert scores.precision == pytest.approx(2 / 3) and scores.recall == pytest.approx(1 / 2)


def test_corpus_aer_sums_counts_before_dividing():
    one = AlignedPair("a", "x", frozenset({(0, 0)}), frozenset({(0, 0)}))
    two = AlignedPair("a b", "x y", frozenset({(0, 0), (1, 1)}), frozenset({(0, 0), (1, 1)}))
    scores = corpus_aer([{(0, 0)}, {(0, 1), (1, 0)}], [one, two])
    assert scores.aer == pytest.approx(1 - (1 + 1) / (3 + 3))  # not the mean of 0 and 1


def test_aer_refuses_sure_links_that_are_not_possible():
    with pytest.raises(ValueError, match="S ⊆ P"):
        aer({(0, 0)}, {(0, 0)}, set())


# ---------------------------------------------------------------------------------------------- from weights
def test_links_from_a_weight_matrix():
    weights = torch.tensor([[0.7, 0.2, 0.1], [0.1, 0.45, 0.45], [0.0, 0.1, 0.9]])  # (T, S)
    assert argmax_links(weights) == {(0, 0), (1, 1), (2, 2)}
    assert _threshold_links(weights, 0.4) == {(0, 0), (1, 1), (1, 2), (2, 2)}
    assert_rows = shifted_rows(weights)
    torch.testing.assert_close(assert_rows, weights[1:])


def test_word_block_drops_eos_and_renormalises():
    weights = torch.tensor([[0.5, 0.25, 0.25], [0.2, 0.2, 0.6], [0.0, 0.0, 1.0]])  # (T + 1, S + 1), <eos> last
    block = word_block(weights, 2, 2)
    torch.testing.assert_close(block, torch.tensor([[2 / 3, 1 / 3], [0.5, 0.5]]))
    with pytest.raises(ValueError, match=r"\(T, S\)"):
        argmax_links(torch.ones(3))


# ---------------------------------------------------------------------------------------------- IBM Model 1
CLASSIC = [("la maison".split(), "the house".split()), ("la fleur".split(), "the flower".split())]


def test_ibm_model1_first_iteration_by_hand():
    # uniform start; E-step: in each sentence each English word splits its count 1/2 : 1/2 over the two French
    # words, so c(the, la) = 1, c(house, la) = c(flower, la) = 1/2, total(la) = 2; total(maison) = total(fleur) = 1
    t = ibm_model1(CLASSIC, iterations=1, null=False)
    assert t["the", "la"] == pytest.approx(1 / 2)
    assert t["house", "la"] == pytest.approx(1 / 4) and t["flower", "la"] == pytest.approx(1 / 4)
    assert t["the", "maison"] == pytest.approx(1 / 2) and t["house", "maison"] == pytest.approx(1 / 2)


def test_ibm_model1_second_iteration_by_hand_and_the_rise_of_t_the_la():
    # iteration 2: c(house, la) = (1/4) / (1/4 + 1/2) = 1/3 per sentence, c(the, la) = 1/2 + 1/2:
    # t(the | la) = 1 / (1 + 1/3 + 1/3) = 3/5; t(house | maison) = (2/3) / (1/2 + 2/3) = 4/7
    t = ibm_model1(CLASSIC, iterations=2, null=False)
    assert t["the", "la"] == pytest.approx(3 / 5) and t["house", "maison"] == pytest.approx(4 / 7)
    rising = [ibm_model1(CLASSIC, iterations=n, null=False)["the", "la"] for n in range(0, 8)]
    assert rising[0] == pytest.approx(1 / 3) and all(a < b for a, b in zip(rising, rising[1:]))
    assert _ibm1_links(t, "la maison".split(), "the house".split()) == {(0, 0), (1, 1)}


def test_ibm_model1_aligns_to_null_and_refuses_nothing():
    t = {("x", "<null>"): 0.9, ("x", "a"): 0.1}
    assert _ibm1_links(t, ["a"], ["x"]) == set()  # NULL wins: unaligned
    with pytest.raises(ValueError, match="at least one sentence"):
        ibm_model1([])


def test_ibm_model1_on_the_toy_task_beats_aligning_to_random_words():
    gold = alignment.toy_pairs(600, seed=0)
    scores = alignment.ibm1_scores(gold[:500], gold[500:], iterations=5)
    rng = random.Random(0)
    chance = corpus_aer([{(t, rng.randrange(len(p.source.split()))) for t in range(len(p.target.split()))}
                         for p in gold[500:]], gold[500:])
    assert scores.aer < chance.aer - 0.3
