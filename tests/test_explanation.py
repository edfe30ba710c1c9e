"""course_utils.explanation: each probe against a direct computation on a small untrained model."""
import math
import random

import pytest
import torch
from torch.testing import assert_close

from course_utils import alignment, explanation
from course_utils.explanation import (
    EosMaskedSeq2Seq,
    _erase_word,
    _leave_one_out,
    _rank_agreement,
    _ReplacedAttention,
    attributions,
    forced_batch,
    kendall_tau,
    sink_mass,
)
from course_utils.runtime import eval_mode
from course_utils.search import force_decode, greedy_decode
from course_utils.seq2seq import Seq2Seq


@pytest.fixture(scope="module")
def toy():
    gold = alignment.toy_pairs(200, seed=0)
    return gold, alignment.toy_course_data(gold, seed=0)


def model_for(data, kind="bahdanau", mask_eos=False):
    torch.manual_seed(0)
    return alignment.toy_model(kind, data, mask_eos=mask_eos, embedding_size=8, hidden_size=16).eval()


def ids(data, pair):
    return data.src_vocab.encode(pair.source), data.tgt_vocab.encode(pair.target)


@pytest.mark.parametrize("kind", ["bahdanau", "scaled_dot", "location"])
def test_forced_batch_equals_force_decode_one_sentence_at_a_time(toy, kind):
    gold, data = toy
    model = model_for(data, kind)
    pairs = [ids(data, p) for p in gold[:5]]
    forced = forced_batch(model, [s for s, _ in pairs], [o for _, o in pairs], batch_size=3)
    for (src, out), logp, weights in zip(pairs, forced.token_log_probs, forced.attention):
        one = force_decode(model, torch.tensor(src), torch.tensor(out))
        assert_close(logp, one.log_probs.gather(1, torch.tensor(out).unsqueeze(1)).squeeze(1), atol=1e-5, rtol=0)
        assert_close(weights, one.attention, atol=1e-5, rtol=0)


def gradient_at_full_input(model, src, out, t):
    """d log p(y_t) / d source embeddings, computed directly (T = 1 row)."""
    embedded = model.encoder.embedding(torch.tensor([src])).detach().requires_grad_(True)  # (1, S, E)
    handle = model.encoder.embedding.register_forward_hook(lambda m, i, o: embedded)
    try:
        log_probs = model(torch.tensor([src]), torch.tensor([len(src)]), torch.tensor([out])).log_probs
    finally:
        handle.remove()
    log_probs[0, t, out[t]].backward()
    return embedded, embedded.grad[0]  # (1, S, E), (S, E)


def test_saliency_and_one_step_integrated_gradients_equal_a_direct_gradient(toy):
    gold, data = toy
    model = model_for(data)
    src, out = ids(data, gold[0])
    saliency = attributions(model, src, out)  # (T, S)
    one_step = attributions(model, src, out, steps=1)
    assert saliency.shape == one_step.shape == (len(out), len(src))
    for t in (0, len(out) - 1):
        embedded, grad = gradient_at_full_input(model, src, out, t)
        assert_close(saliency[t], grad.norm(dim=-1), atol=1e-5, rtol=1e-4)
        assert_close(one_step[t], (embedded[0] * grad).sum(-1).abs().detach(), atol=1e-5, rtol=1e-4)


def test_integrated_gradients_are_non_negative_per_position_and_depend_on_the_steps(toy):
    gold, data = toy
    model = model_for(data)
    src, out = ids(data, gold[1])
    ig = attributions(model, src, out, steps=16)
    assert ig.shape == (len(out), len(src)) and (ig >= 0).all()
    assert not torch.allclose(ig, attributions(model, src, out, steps=1))  # the path average is not one gradient


def test_leave_one_out_equals_force_decoding_without_the_word(toy):
    gold, data = toy
    model = model_for(data)
    src, out = ids(data, gold[2])
    loo = _leave_one_out(model, src, out)  # (T, S - 1)
    assert loo.shape == (len(out), len(src) - 1)
    target = torch.tensor(out).unsqueeze(1)
    full = force_decode(model, torch.tensor(src), torch.tensor(out)).log_probs.gather(1, target).squeeze(1)
    without = src[:1] + src[2:]  # word 1 deleted
    less = force_decode(model, torch.tensor(without), torch.tensor(out)).log_probs.gather(1, target).squeeze(1)
    assert_close(loo[:, 1], full - less, atol=1e-5, rtol=0)


def test_kendall_tau_by_hand():
    assert kendall_tau(torch.tensor([1.0, 2, 3]), torch.tensor([1.0, 3, 2])) == pytest.approx(1 / 3)  # 2 c, 1 d
    assert kendall_tau(torch.tensor([1.0, 1, 2]), torch.tensor([1.0, 2, 3])) == pytest.approx(2 / math.sqrt(6))
    assert kendall_tau(torch.tensor([1.0, 2, 3]), torch.tensor([3.0, 2, 1])) == pytest.approx(-1)
    assert math.isnan(kendall_tau(torch.ones(3), torch.tensor([1.0, 2, 3])))
    assert _rank_agreement(torch.tensor([[1.0, 2, 3], [1, 1, 1]]), torch.tensor([[1.0, 3, 2], [1, 2, 3]])) == \
        pytest.approx(1 / 3)  # the tied row is skipped


def test_erase_word_and_erasure_effects_count_the_sentences(toy):
    assert _erase_word(["le", "chat", "noir", "."], 1) == "le noir ."
    gold, data = toy
    model = model_for(data)
    effects = explanation.erasure_effects(model, data.src_vocab, data.tgt_vocab, [p.source for p in gold[:6]])
    assert list(effects) == ["most attended", "random", "least attended"]
    assert all(e.sentences == 6 and 0 <= e.changed <= 6 and math.isfinite(e.log_prob_drop) for e in effects.values())


def test_erasure_picks_the_most_and_the_least_attended_word_and_never_punctuation():
    words = ["le", "chat", ",", "noir", "dort"]
    received = torch.tensor([0.1, 0.3, 0.6, 0.25, 0.05])  # the comma gets the most, but is not a word
    for seed in range(5):
        picks = explanation._picks(received, words, random.Random(seed))
        assert picks["most attended"] == 1 and picks["least attended"] == 4
        assert picks["random"] in (0, 1, 3, 4)
    assert explanation._picks(received[:3], ["le", ",", "."], random.Random(0)) is None  # one word: no choice


@pytest.mark.parametrize("kind", ["bahdanau", "scaled_dot"])
def test_uniform_attention_weights_are_uniform_and_the_model_is_restored(toy, kind):
    gold, data = toy
    model = model_for(data, kind)
    src, out = ids(data, gold[3])
    before = forced_batch(model, [src], [out]).attention[0]
    weights = forced_batch(_ReplacedAttention(model, "uniform"), [src], [out]).attention[0]  # (T, S)
    assert_close(weights, torch.full_like(weights, 1 / len(src)))
    assert_close(forced_batch(model, [src], [out]).attention[0], before)
    assert not isinstance(model.decoder.attention, _ReplacedAttention)


@pytest.mark.parametrize("kind", ["bahdanau", "scaled_dot"])
def test_frozen_attention_repeats_the_first_step_in_training_form_and_in_greedy_decoding(toy, kind):
    gold, data = toy
    model = model_for(data, kind)
    src, out = ids(data, gold[4])
    first_step = forced_batch(model, [src], [out]).attention[0][0]  # (S,)
    frozen = _ReplacedAttention(model, "frozen")
    weights = forced_batch(frozen, [src], [out]).attention[0]  # (T, S): teacher forced
    with eval_mode(frozen):
        decoded = greedy_decode(frozen, torch.tensor([src]), torch.tensor([len(src)]))
    assert_close(weights, first_step.expand_as(weights))
    greedy_weights = decoded.attention[0, :int(decoded.lengths[0]), :len(src)]
    assert_close(greedy_weights, first_step.expand_as(greedy_weights), atol=1e-6, rtol=0)


def test_replaced_attention_refuses_the_location_exhibit_and_unknown_modes(toy):
    _, data = toy
    with pytest.raises(ValueError, match="no content attention"):
        _ReplacedAttention(model_for(data, "location"), "uniform")
    with pytest.raises(ValueError, match="unknown replacement"):
        _ReplacedAttention(torch.nn.Identity(), "shuffled")


def test_sink_mass_by_hand():
    attention = torch.tensor([[0.5, 0.1, 0.4], [0.2, 0.2, 0.6]])  # (T, S) over "chat", ".", "<eos>"
    mass = sink_mass(attention, ["chat", ".", "<eos>"])
    assert mass.eos == pytest.approx(0.5) and mass.punctuation == pytest.approx(0.15)
    with pytest.raises(ValueError, match="T, S=2"):
        sink_mass(attention, ["chat", "<eos>"])


def test_eos_masked_model_never_attends_to_eos_and_trains_like_any_seq2seq(toy):
    gold, data = toy
    model = model_for(data, "bahdanau", mask_eos=True)
    assert isinstance(model, EosMaskedSeq2Seq) and isinstance(model, Seq2Seq)
    src, out = ids(data, gold[5])
    weights = forced_batch(model, [src], [out]).attention[0]  # (T, S)
    assert (weights[:, -1] == 0).all() and torch.allclose(weights.sum(1), torch.ones(len(out)))
