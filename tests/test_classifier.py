"""Tests for course_utils.classifier: the subject task, the fixed model, the baselines, training, caching and the
inline highlighting. The lecture's own classifier and its two bugs are tested in test_sources_lecture.py."""
from __future__ import annotations

import io
import os

import pytest
import torch
import torch.nn.functional as F

from course_utils import classifier, zoo
from course_utils.checkpoints import CheckpointError
from course_utils.classifier import (
    SUBJECTS,
    AttentionClassifier,
    BagOfWordsClassifier,
    ClassifierConfig,
    ClassifierOutput,
    SoftAttentionClassifier,
    _selected_words,
    _subject_batches,
    evaluate_classifier,
    gold_rationale,
    highlight_html,
    subject_batch,
    subject_label,
    train_classifier,
)
from course_utils.data import Pair
from course_utils.vocab import PAD_ID, Vocab

PAIRS = [Pair("je suis fatigue .", "i m tired ."), Pair("il est grand .", "he is tall ."),
         Pair("c est mon amie .", "she s my friend ."), Pair("vous etes en retard !", "you are late .")]


@pytest.fixture
def vocab() -> Vocab:
    return Vocab.build(pair.source for pair in PAIRS)


@pytest.fixture
def batch(vocab):
    return subject_batch(PAIRS, vocab)


def test_labels_come_from_the_english_subject():
    assert [subject_label(p.target) for p in PAIRS] == [0, 1, 2, 3]
    assert subject_label("you re late .") == SUBJECTS.index("you") and subject_label("they re here .") == 5
    with pytest.raises(ValueError, match="ENG_PREFIXES"):
        subject_label("are you tired ?")


def test_gold_rationale_is_the_first_subject_pronoun_of_the_label():
    assert gold_rationale("je suis fatigue .", 0) == [True, False, False, False]
    assert gold_rationale("j ai faim .", 0) == [True, False, False, False]
    assert gold_rationale("je vous aime .", 0) == [True, False, False, False]  # vous is the object here
    assert gold_rationale("nous nous sommes perdus .", 4) == [True, False, False, False, False]
    assert not any(gold_rationale("c est mon amie .", 2))  # no pronoun: no gold rationale


def test_subject_batch_shapes_padding_and_gold(batch, vocab):
    assert batch.words.shape == batch.mask.shape == batch.gold.shape == (4, 5)
    assert batch.mask.sum(1).tolist() == [4, 4, 5, 5] and (batch.words[~batch.mask] == PAD_ID).all()
    assert batch.labels.tolist() == [0, 1, 2, 3]
    assert batch.gold.sum(1).tolist() == [1, 1, 0, 1] and not (batch.gold & ~batch.mask).any()
    assert vocab.index2word[int(batch.words[3][batch.gold[3]])] == "vous"


def test_subject_batches_cover_every_pair_and_trim_the_padding(vocab):
    batches = list(_subject_batches(PAIRS, vocab, batch_size=2))
    assert [b.words.shape for b in batches] == [(2, 4), (2, 5)]  # the first batch has no column of padding
    shuffled = list(_subject_batches(PAIRS, vocab, batch_size=3, seed=1))
    assert sorted(torch.cat([b.labels for b in shuffled]).tolist()) == [0, 1, 2, 3]
    again = list(_subject_batches(subject_batch(PAIRS, vocab), batch_size=3, seed=1))
    assert all(torch.equal(a.words, b.words) for a, b in zip(shuffled, again, strict=True))


# ---------------------------------------------------------------------------------------------- fixed model
def test_fixed_model_shapes_and_masking(batch, vocab):
    torch.manual_seed(0)
    out = AttentionClassifier(len(vocab))(batch.words, batch.mask)
    assert isinstance(out, ClassifierOutput)
    assert out.logits.shape == (4, len(SUBJECTS)) and out.weights.shape == (4, 5) and out.sparsity.dim() == 0
    assert (out.weights[~batch.mask] == 0).all() and (out.weights[batch.mask] > 0).all()


def test_fixed_sparsity_is_the_mean_fraction_of_each_sentences_words(batch, vocab):
    """Fails on bug 2: over the words only (not 0 unpadded, no padding in the average), per sentence."""
    torch.manual_seed(0)
    model = AttentionClassifier(len(vocab))
    out = model(batch.words, batch.mask)
    per_sentence = [out.weights[b, :n].mean() for b, n in enumerate(batch.mask.sum(1).tolist())]
    torch.testing.assert_close(out.sparsity, torch.stack(per_sentence).mean())
    alone = model(batch.words[:1, :4], batch.mask[:1, :4])
    assert alone.sparsity.item() > 0.1  # an unpadded sentence has a sparsity term
    gates = out.weights.detach().requires_grad_()
    (gates.sum(1) / batch.mask.sum(1)).mean().backward()
    assert (gates.grad[batch.mask] > 0).all()  # the form used pushes on every word


def test_fixed_model_uses_the_predictor(batch, vocab):
    """Fails on bug 1: the predictor GRU gets gradients, and changing it changes the logits."""
    torch.manual_seed(0)
    model = AttentionClassifier(len(vocab))
    out = model(batch.words, batch.mask)
    F.cross_entropy(out.logits, batch.labels).backward()
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in model.predictor.parameters())
    with torch.no_grad():
        model.predictor.weight_hh_l0.add_(0.5)
        assert not torch.allclose(model(batch.words, batch.mask).logits, out.logits)


@pytest.mark.parametrize("make", [lambda v: AttentionClassifier(v), lambda v: AttentionClassifier(v, selection="hard"),
                                  SoftAttentionClassifier, BagOfWordsClassifier])
def test_a_sentence_gets_the_same_output_alone_and_in_a_padded_batch(make, batch, vocab):
    torch.manual_seed(0)
    model = make(len(vocab)).eval()
    if isinstance(model, BagOfWordsClassifier):
        torch.nn.init.normal_(model.word_scores.weight)
    together = model(batch.words, batch.mask)
    alone = model(batch.words[:1, :4], batch.mask[:1, :4])
    torch.testing.assert_close(alone.logits, together.logits[:1])
    torch.testing.assert_close(alone.weights, together.weights[:1, :4])


def test_hard_selection_is_exactly_zero_or_one_and_still_trains(batch, vocab):
    torch.manual_seed(0)
    model = AttentionClassifier(len(vocab), selection="hard")
    out = model(batch.words, batch.mask)
    assert set(out.weights.unique().tolist()) <= {0.0, 1.0}
    (F.cross_entropy(out.logits, batch.labels) + out.sparsity).backward()
    assert model.attention_score.weight.grad.abs().sum() > 0  # straight-through: the gates learn
    with pytest.raises(ValueError, match="soft"):
        AttentionClassifier(10, selection="sparse")


def test_soft_attention_weights_are_a_distribution_over_the_words(batch, vocab):
    torch.manual_seed(0)
    out = SoftAttentionClassifier(len(vocab))(batch.words, batch.mask)
    torch.testing.assert_close(out.weights.sum(1), torch.ones(4))
    assert (out.weights[~batch.mask] == 0).all() and out.sparsity.item() == 0.0


def test_bag_of_words_is_logistic_regression_on_counts(batch, vocab):
    torch.manual_seed(0)
    model = BagOfWordsClassifier(len(vocab))
    torch.nn.init.normal_(model.word_scores.weight)
    with torch.no_grad():
        model.word_scores.weight[PAD_ID] = 0
    counts = torch.zeros(4, len(vocab))  # (B, V): how often each word occurs in each sentence
    counts.index_put_((torch.arange(4).repeat_interleave(batch.mask.sum(1)), batch.words[batch.mask]),
                      torch.ones(int(batch.mask.sum())), accumulate=True)
    out = model(batch.words, batch.mask)
    torch.testing.assert_close(out.logits, counts @ model.word_scores.weight + model.bias)
    top = _selected_words(model, out, batch.mask)
    assert top.sum(1).tolist() == [1, 1, 1, 1] and not (top & ~batch.mask).any()


def test_selected_words_thresholds_gates_and_takes_the_argmax_of_distributions(vocab):
    mask = torch.tensor([[True, True, True, False]])
    gates = ClassifierOutput(torch.zeros(1, 6), torch.tensor([[0.6, 0.4, 0.9, 0.0]]), torch.tensor(0.0))
    assert _selected_words(AttentionClassifier(len(vocab)), gates, mask).tolist() == [[True, False, True, False]]
    assert _selected_words(SoftAttentionClassifier(len(vocab)), gates, mask).tolist() == [[False, False, True, False]]


# ---------------------------------------------------------------------------------------------- training, caching
def test_training_learns_the_tiny_task_and_evaluation_reports_rationales(vocab):
    config = ClassifierConfig(kind="bow", epochs=30, batch_size=2, learning_rate=0.1)
    model = classifier.build_classifier(config, len(vocab))
    history = train_classifier(model, PAIRS, vocab, config, log=None)
    assert len(history) == 30 and history[-1]["loss"] < history[0]["loss"]
    scores = evaluate_classifier(model, PAIRS, vocab)
    assert scores.accuracy == 1.0 and scores.rationale.sentences == 3
    assert 0.0 <= scores.rationale.precision <= 1.0 and scores.rationale.kept == pytest.approx(4 / 18)


def test_load_or_train_caches_atomically_and_reloads(tiny_course_data, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("COURSE_DATA_DIR", str(tmp_path))
    config = ClassifierConfig(kind="gated", selection="hard", sparsity_weight=0.1, hidden_size=8, embedding_size=8)
    trained = zoo.load_or_train(config, tiny_course_data, fast=True)
    path = tmp_path / "models" / "classifier-gated-hard-0.1-fast.pt"
    assert path.is_file() and trained.fast and trained.config.epochs == zoo._FAST_CLASSIFIER["epochs"]
    assert not list((tmp_path / "models").glob(".*.tmp"))  # no temporary file left behind
    assert "Training" in capsys.readouterr().out
    again = zoo.load_or_train(config, tiny_course_data, fast=True)
    assert "Loaded" in capsys.readouterr().out
    for a, b in zip(trained.model.state_dict().values(), again.model.state_dict().values(), strict=True):
        torch.testing.assert_close(a, b)
    other = ClassifierConfig(kind="gated", selection="hard", sparsity_weight=0.1)  # same name, other sizes
    zoo.load_or_train(other, tiny_course_data, fast=True)
    assert "training again" in capsys.readouterr().out


class RunsCode:
    """Pickled, it would call os.makedirs(marker) when loaded with torch.load(weights_only=False)."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return os.makedirs, (self.marker,)


@pytest.fixture
def cached_bow(tiny_course_data, tmp_path, monkeypatch):
    """A fast-mode bag-of-words classifier cached in a private data folder; training again fails the test."""
    monkeypatch.setenv("COURSE_DATA_DIR", str(tmp_path))
    config = ClassifierConfig(kind="bow")
    zoo.load_or_train(config, tiny_course_data, log=None, fast=True)

    def fail(*args, **kwargs):
        raise AssertionError("a cached classifier that cannot be used was silently trained over")
    monkeypatch.setattr(zoo, "train_classifier", fail)
    return config, zoo.model_path(config, fast=True)


def refused(config, path, data, *words) -> str:
    """zoo.load_or_train raises a one-line CheckpointError naming the file, the fix and every word; the
    cached file is left byte for byte as it was."""
    before = path.read_bytes()
    with pytest.raises(CheckpointError) as caught:
        zoo.load_or_train(config, data, log=None, fast=True)
    message = str(caught.value)
    assert "\n" not in message and path.name in message and "retrain=True" in message and "delete" in message, message
    assert all(word in message for word in words), message
    assert path.read_bytes() == before
    return message


def test_a_cached_classifier_holding_pickled_code_is_refused_without_running_it(cached_bow, tiny_course_data,
                                                                                tmp_path):
    config, path = cached_bow
    marker = tmp_path / "the-code-ran"
    payload = torch.load(path, weights_only=True)
    torch.save({**payload, "extra": RunsCode(marker)}, path)  # a valid classifier, plus code to run on load
    refused(config, path, tiny_course_data, "pickled code", "os.makedirs")
    assert not marker.exists()  # the code never ran (it does with torch.load(weights_only=False))


def _saved(payload) -> bytes:
    buffer = io.BytesIO()
    torch.save(payload, buffer)
    return buffer.getvalue()


@pytest.mark.parametrize("edit, words", [
    (lambda raw, p: b"\x80\x02 not a torch file", ["not a readable course checkpoint"]),
    (lambda raw, p: raw[: len(raw) // 2], ["not a readable course checkpoint"]),  # truncated
    (lambda raw, p: _saved({k: v for k, v in p.items() if k != "state_dict"}), ["incomplete", "state_dict"]),
    (lambda raw, p: _saved({**p, "src_vocab": "words"}), ["damaged"]),
    (lambda raw, p: _saved({**p, "format": "other"}), ["not a course_utils checkpoint"]),
    (lambda raw, p: _saved({**p, "state_dict": {k: v * float("nan") for k, v in p["state_dict"].items()}}),
     ["NaN"]),
    (lambda raw, p: _saved({**p, "state_dict": {k: v[:1] for k, v in p["state_dict"].items()}}), ["do not fit"]),
], ids=["random bytes", "truncated", "no state_dict", "damaged vocabulary", "other format", "NaN weights",
        "weights that do not fit"])
def test_a_damaged_classifier_cache_is_refused_in_one_line(cached_bow, tiny_course_data, edit, words):
    config, path = cached_bow
    path.write_bytes(edit(path.read_bytes(), torch.load(path, weights_only=True)))
    refused(config, path, tiny_course_data, *words)


def test_a_valid_cache_of_another_vocabulary_is_trained_again(cached_bow, tiny_course_data, monkeypatch, capsys):
    config, path = cached_bow
    payload = torch.load(path, weights_only=True)
    path.write_bytes(_saved({**payload, "src_vocab": {**payload["src_vocab"], "min_freq": 2}}))
    monkeypatch.setattr(zoo, "train_classifier", lambda *args, **kwargs: [])
    zoo.load_or_train(config, tiny_course_data, fast=True)
    assert "training again" in capsys.readouterr().out
    assert Vocab.from_dict(torch.load(path, weights_only=True)["src_vocab"]) == tiny_course_data.src_vocab


def test_unknown_kind_is_refused():
    with pytest.raises(ValueError, match="gated"):
        classifier.build_classifier(ClassifierConfig(kind="svm"), 10)
    assert ClassifierConfig(sparsity_weight=0.05).name == "classifier-gated-soft-0.05"
    assert ClassifierConfig(kind="bow").name == "classifier-bow"


# ---------------------------------------------------------------------------------------------- showing
def test_highlight_html_is_one_line_of_inline_spans():
    html = highlight_html(["je", "<b>", "."], torch.tensor([1.0, 0.25, 1.5]))
    assert html.count("<span") == 3 and "\n" not in html
    assert "<div" not in html.split(">", 1)[1] and "<br" not in html and "<p" not in html  # one block, no breaks
    assert "rgba(255, 140, 0, 1.00)" in html and "0.25)" in html and "&lt;b&gt;" in html  # clipped, escaped
    with pytest.raises(ValueError, match="slice"):
        highlight_html(["a", "b"], [0.5])


def test_course_seed_trains_another_run_of_a_classifier(tiny_course_data, tmp_path, monkeypatch):
    monkeypatch.setenv("COURSE_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("COURSE_SEED", "4")
    config = ClassifierConfig(kind="bow")
    assert zoo.load_or_train(config, tiny_course_data, log=None, fast=True).config.seed == 4
