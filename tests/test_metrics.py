"""Tests for course_utils.metrics: sacreBLEU wrappers and attention statistics."""
import math

import numpy as np
import pytest
import torch
from sacrebleu.metrics import BLEU, CHRF

from course_utils.metrics import Scores, attention_entropy, corpus_scores, diagonal_deviation, max_entropy

# ---------------------------------------------------------------- corpus_scores


def test_corpus_scores_perfect_translation_is_100():
    refs = ["i am cold .", "he is very tall ."]
    scores = corpus_scores(refs, refs)
    assert isinstance(scores, Scores)
    assert scores.bleu == pytest.approx(100.0)
    assert scores.chrf == pytest.approx(100.0)


def test_corpus_scores_matches_sacrebleu_corpus_level_not_sentence_average():
    hyps = ["i am cold .", "he is tall .", "we are here"]
    refs = ["i am cold .", "he is very tall .", "they are there ."]
    scores = corpus_scores(hyps, refs)
    assert scores.bleu == pytest.approx(BLEU().corpus_score(hyps, [refs]).score)
    assert scores.chrf == pytest.approx(CHRF().corpus_score(hyps, [refs]).score)
    sentence_average = np.mean([BLEU(effective_order=True).sentence_score(h, [r]).score
                                for h, r in zip(hyps, refs, strict=True)])
    assert scores.bleu != pytest.approx(sentence_average)
    assert 0.0 < scores.bleu < 100.0


def test_corpus_scores_signature_names_both_metrics_and_version():
    import sacrebleu

    signature = corpus_scores(["a b c d"], ["a b c d"]).signature
    assert signature.startswith("BLEU nrefs:1|")
    assert "tok:13a" in signature
    assert "chrF2 nrefs:1|" in signature
    assert f"version:{sacrebleu.__version__}" in signature


def test_corpus_scores_worse_translation_scores_lower():
    refs = ["she is a good teacher .", "i m afraid of dogs ."]
    good = corpus_scores(["she is a good teacher .", "i m afraid of cats ."], refs)
    bad = corpus_scores(["he is a teacher .", "you are happy ."], refs)
    assert bad.bleu < good.bleu
    assert bad.chrf < good.chrf


@pytest.mark.parametrize(
    "hyps, refs, error, words",
    [
        (["a"], ["a", "b"], ValueError, ["1 hypotheses", "2 references", "one reference per hypothesis"]),
        ([], [], ValueError, ["no sentences", "at least one"]),
        ("i am cold .", ["i am cold ."], TypeError, ["one string", "wrap it in a list: ['i am cold .']"]),
        ([["i", "am"]], ["i am"], TypeError, ["hypotheses[0]", "join"]),
    ],
)
def test_corpus_scores_bad_input_names_problem_and_fix(hyps, refs, error, words):
    with pytest.raises(error) as info:
        corpus_scores(hyps, refs)
    for word in words:
        assert word in str(info.value)


# ---------------------------------------------------------------- attention_entropy

def test_entropy_is_zero_for_one_hot_rows_and_log_s_for_uniform_rows():
    one_hot = torch.eye(4)
    uniform = torch.full((3, 5), 0.2)
    assert torch.equal(attention_entropy(one_hot), torch.zeros(4))
    assert not torch.signbit(attention_entropy(one_hot)).any()  # no -0.0 printed in the notebook
    assert torch.allclose(attention_entropy(uniform), torch.full((3,), math.log(5)))
    assert max_entropy(5) == pytest.approx(math.log(5))


def test_entropy_matches_definition_and_accepts_numpy():
    rng = np.random.default_rng(0)
    weights = rng.random((6, 7))
    weights /= weights.sum(axis=1, keepdims=True)
    expected = -(weights * np.log(weights)).sum(axis=1)
    result = attention_entropy(weights)
    assert result.shape == (6,)
    assert np.allclose(result.numpy(), expected, atol=1e-6)


def test_entropy_ignores_zero_weight_pads():
    padded = torch.tensor([[0.5, 0.5, 0.0, 0.0]])
    assert torch.allclose(attention_entropy(padded), torch.tensor([math.log(2)]))
    assert torch.isfinite(attention_entropy(padded)).all()


# ---------------------------------------------------------------- diagonal_deviation

def test_diagonal_deviation_zero_on_identity_half_on_anti_diagonal():
    assert diagonal_deviation(torch.eye(6)) == pytest.approx(0.0)
    assert diagonal_deviation(torch.eye(50).flip(1)) == pytest.approx(0.5)


def test_diagonal_deviation_uniform_is_about_one_third():
    n = 40
    assert diagonal_deviation(torch.full((n, n), 1.0 / n)) == pytest.approx(1 / 3, abs=1e-3)


def test_diagonal_deviation_orders_maps_from_monotone_to_scrambled():
    T, S = 5, 6
    monotone = torch.zeros(T, S)
    monotone[torch.arange(T), torch.arange(T)] = 1.0
    monotone[T - 1] = 0.0
    monotone[T - 1, S - 1] = 1.0  # the final <eos> looks at the source <eos>
    swapped = monotone[[1, 0, 3, 2, 4]]  # two local reorderings
    uniform = torch.full((T, S), 1.0 / S)
    reversed_ = monotone.flip(1)
    values = [diagonal_deviation(w) for w in (monotone, swapped, uniform, reversed_)]
    assert values == sorted(values)
    assert values[0] < 0.1
    assert isinstance(values[0], float)


def test_diagonal_deviation_penalises_diffuse_row_centred_on_the_diagonal():
    sharp = torch.tensor([[0.0, 1.0, 0.0]])
    diffuse = torch.tensor([[0.5, 0.0, 0.5]])  # expected position is also the centre
    assert diagonal_deviation(sharp) == pytest.approx(0.0)
    assert diagonal_deviation(diffuse) > 0.3


@pytest.mark.parametrize("function", [attention_entropy, diagonal_deviation])
@pytest.mark.parametrize(
    "weights, words",
    [
        (torch.full((2, 3, 4), 0.25), ["(T, S)", "(2, 3, 4)", "attention[0"]),
        (torch.tensor([[2.0, -1.0]]), ["negative", "after softmax"]),
        (torch.tensor([[0.2, 0.2]]), ["sum to 1", "real length"]),
        (torch.zeros(0, 3), ["empty"]),
        (None, ["no attention", "attention='none'"]),
    ],
)
def test_attention_statistics_bad_input_names_problem_and_fix(function, weights, words):
    with pytest.raises(ValueError) as info:
        function(weights)
    for word in words:
        assert word in str(info.value)


def test_tokenised_course_text_gives_no_detokenize_warning(caplog):
    # The course's text is tokenised ("i m cold ."); sacreBLEU would warn on every evaluation without force=True,
    # and that warning lands on stderr in every notebook cell that evaluates a model.
    sentences = ["i m cold .", "he is tall .", "we re late ."] * 40
    with caplog.at_level("WARNING"):
        scores = corpus_scores(sentences, sentences)
    assert scores.bleu == pytest.approx(100.0)
    assert not [record for record in caplog.records if "detokenize" in record.getMessage()]


# ---------------------------------------------------------------- rationale_scores

def test_rationale_scores_by_hand():
    from course_utils.metrics import RationaleScores, rationale_scores

    mask = torch.tensor([[True, True, True, False], [True, True, True, True], [True, True, False, False]])
    gold = torch.tensor([[True, False, False, False], [False, True, False, False], [False, False, False, False]])
    selected = torch.tensor([[True, True, False, True], [False, False, True, False], [True, False, False, False]])
    scores = rationale_scores(selected, gold, mask)
    assert isinstance(scores, RationaleScores)
    # sentence 3 has no gold word: it counts for `kept` only; the selected pad (row 1) never counts
    assert scores.precision == pytest.approx(1 / 3) and scores.recall == pytest.approx(1 / 2)
    assert scores.kept == pytest.approx(4 / 9) and scores.sentences == 2


def test_rationale_scores_edge_cases():
    from course_utils.metrics import rationale_scores

    mask = torch.ones(2, 3, dtype=torch.bool)
    gold = torch.eye(2, 3, dtype=torch.bool)
    assert rationale_scores(gold, gold, mask)[:3] == (1.0, 1.0, 2 / 6)
    assert rationale_scores(torch.zeros_like(gold), gold, mask)[:3] == (0.0, 0.0, 0.0)  # nothing selected
    assert rationale_scores(mask, gold, mask).precision == pytest.approx(2 / 6)  # everything selected: recall 1
    with pytest.raises(ValueError, match="one shape"):
        rationale_scores(gold, gold[:, :2], mask)


# ---------------------------------------------------------------- BLEU by hand

def sacrebleu_corpus_bleu(hyps, refs):
    import sacrebleu

    return sacrebleu.corpus_bleu(hyps, [refs], force=True)


BLEU_CASES = {
    "two sentences": (["i m very tired .", "he is a good teacher ."], ["i m so tired .", "he is a teacher ."]),
    "clipping": (["the the the the"], ["the cat is on the mat"]),
    "short hypothesis": (["i m cold ."], ["i m very cold today ."]),
    "no 4-gram match (exp smoothing)": (["we re late here ."], ["we re not late ."]),
    "no 3- or 4-gram match": (["you are tall ."], ["are you tall ?"]),
    "longer hypothesis": (["she is a very very good teacher ."], ["she is a good teacher ."]),
}


@pytest.mark.parametrize("case", BLEU_CASES)
def test_bleu_by_hand_equals_sacrebleu_corpus_bleu(case):
    from course_utils.metrics import bleu_by_hand, ngram_precisions

    hyps, refs = BLEU_CASES[case]
    expected = sacrebleu_corpus_bleu(hyps, refs)
    counts = ngram_precisions(hyps, refs)
    assert counts.matches == expected.counts and counts.totals == expected.totals
    assert (counts.hyp_len, counts.ref_len) == (expected.sys_len, expected.ref_len)
    assert bleu_by_hand(hyps, refs) == pytest.approx(expected.score, abs=1e-9)
    assert bleu_by_hand(hyps, refs) == pytest.approx(corpus_scores(hyps, refs).bleu, abs=1e-9)


def test_clipping_counts_a_repeated_word_at_most_as_often_as_the_reference_has_it():
    from course_utils.metrics import ngram_precisions

    counts = ngram_precisions(["the the the the"], ["the cat is on the mat"])
    assert counts.matches[0] == 2 and counts.totals[0] == 4  # "the" twice in the reference: 2 of 4, not 4 of 4


def test_brevity_penalty_punishes_short_hypotheses_only():
    from course_utils.metrics import brevity_penalty

    assert brevity_penalty(5, 5) == 1.0 and brevity_penalty(7, 5) == 1.0
    assert brevity_penalty(3, 5) == pytest.approx(math.exp(1 - 5 / 3))
    assert brevity_penalty(0, 5) == 0.0


def test_bleu_by_hand_matches_sacrebleu_on_random_corpora():
    from course_utils.metrics import bleu_by_hand

    rng = np.random.default_rng(0)
    words = "i m you re he is a the cold tired good . !".split()
    for _ in range(50):
        n = int(rng.integers(1, 5))
        hyps = [" ".join(rng.choice(words, int(rng.integers(1, 9)))) for _ in range(n)]
        refs = [" ".join(rng.choice(words, int(rng.integers(1, 9)))) for _ in range(n)]
        assert bleu_by_hand(hyps, refs) == pytest.approx(sacrebleu_corpus_bleu(hyps, refs).score, abs=1e-6)


def test_bleu_by_hand_is_zero_without_matches_and_names_bad_input():
    from course_utils.metrics import bleu_by_hand, ngram_precisions

    assert bleu_by_hand(["a b c d"], ["e f g h"]) == 0.0
    assert sacrebleu_corpus_bleu(["a b c d"], ["e f g h"]).score == pytest.approx(0.0)
    with pytest.raises(ValueError, match="one reference per hypothesis"):
        ngram_precisions(["a"], ["a", "b"])
    with pytest.raises(ValueError, match="max_n"):
        ngram_precisions(["a"], ["a"], max_n=0)
    with pytest.raises(TypeError, match="wrap it in a list"):
        bleu_by_hand("a b", ["a b"])
