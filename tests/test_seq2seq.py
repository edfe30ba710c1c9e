"""Tests for course_utils.seq2seq: every attention kind end to end: shapes, padding invariance, masking,
gradients, initialisation, determinism, config checks."""
import dataclasses
import subprocess
import sys

import pytest
import torch
import torch.nn.functional as F
from helpers import random_padded_ids
from torch.testing import assert_close

from course_utils.decoder import AttnDecoderRNN, BahdanauDecoder, DecoderRNN, LuongDecoder
from course_utils.seq2seq import (
    ATTENTION_KINDS,
    ModelConfig,
    Seq2Seq,
    Seq2SeqOutput,
    StepDecoder,
    Translator,
    count_parameters,
)
from course_utils.vocab import MAX_LENGTH, PAD_ID, SOS_ID

V_SRC, V_TGT = 17, 13
SRC_LENGTHS, TGT_LENGTHS = [4, 7, 2], [5, 3, 6]
VARIANTS = [dict(attention=kind) for kind in ATTENTION_KINDS] + [
    dict(attention="bahdanau", bidirectional=True), dict(attention="general", bidirectional=True),
    dict(attention="location", bidirectional=True), dict(attention="general", input_feeding=True),
    dict(attention="concat", input_feeding=True)]
IDS = ["-".join(str(value) for value in variant.values()) for variant in VARIANTS]


def build(seed=0, **overrides):
    torch.manual_seed(seed)
    config = ModelConfig(V_SRC, V_TGT, embedding_size=6, hidden_size=8, **overrides)
    return Seq2Seq(config).eval()


def make_batch(seed=0):
    src, src_lengths = random_padded_ids(SRC_LENGTHS, V_SRC, seed)
    tgt, tgt_lengths = random_padded_ids(TGT_LENGTHS, V_TGT, seed + 1)
    return src, src_lengths, tgt, tgt_lengths


@pytest.mark.parametrize("variant", VARIANTS, ids=IDS)
def test_output_shapes_and_attention_rows(variant):
    model = build(**variant)
    src, src_lengths, tgt, _ = make_batch()
    out = model(src, src_lengths, tgt)
    assert isinstance(out, Seq2SeqOutput)
    assert out.log_probs.shape == (3, 6, V_TGT)
    assert_close(out.log_probs.exp().sum(-1), torch.ones(3, 6))
    kind = variant["attention"]
    if kind == "none":
        assert out.attention is None
        return
    width = MAX_LENGTH if kind == "location" else src.shape[1]
    assert out.attention.shape == (3, 6, width)
    assert_close(out.attention.sum(-1), torch.ones(3, 6))
    if kind != "location":  # the 2017 exhibit does not mask (see test_decoder.py)
        pads = (src == PAD_ID).unsqueeze(1).expand_as(out.attention)
        assert (out.attention[pads] == 0).all()


@pytest.mark.parametrize("variant", VARIANTS, ids=IDS)
def test_a_sentence_alone_gets_the_same_log_probs_as_in_a_padded_batch(variant):
    model = build(**variant)
    src, src_lengths, tgt, tgt_lengths = make_batch()
    batch = model(src, src_lengths, tgt)
    for row in range(3):
        s, t = SRC_LENGTHS[row], TGT_LENGTHS[row]
        alone = model(src[row:row + 1, :s], src_lengths[row:row + 1], tgt[row:row + 1, :t])
        assert_close(batch.log_probs[row, :t], alone.log_probs[0])
        if batch.attention is not None:
            width = MAX_LENGTH if variant["attention"] == "location" else s
            assert_close(batch.attention[row, :t, :width], alone.attention[0])


@pytest.mark.parametrize("variant", VARIANTS, ids=IDS)
def test_gradients_reach_every_parameter(variant):
    model = build(**variant).train()
    src, src_lengths, tgt, _ = make_batch()
    log_probs = model(src, src_lengths, tgt).log_probs
    F.nll_loss(log_probs.reshape(-1, V_TGT), tgt.reshape(-1), ignore_index=PAD_ID).backward()
    for name, parameter in model.named_parameters():
        assert parameter.grad is not None and parameter.grad.abs().sum() > 0, name
        assert torch.isfinite(parameter.grad).all(), name


@pytest.mark.parametrize("kind", ATTENTION_KINDS)
def test_parameters_are_finite_and_bounded_after_init_at_course_size(kind):
    torch.manual_seed(0)
    model = Seq2Seq(ModelConfig(100, 80, attention=kind))  # default sizes: 256
    for name, parameter in model.named_parameters():
        assert torch.isfinite(parameter).all(), name
        assert parameter.abs().max() < 10, name  # embeddings ~ N(0, 1), everything else within +-1/sqrt(fan_in)


@pytest.mark.parametrize("kind", ATTENTION_KINDS)
def test_eval_mode_is_deterministic_and_seeded_init_is_reproducible(kind):
    model = build(attention=kind, dropout=0.5)
    src, src_lengths, tgt, _ = make_batch()
    first = model(src, src_lengths, tgt).log_probs
    assert torch.equal(model(src, src_lengths, tgt).log_probs, first)  # no dropout in eval mode
    assert torch.equal(build(attention=kind, dropout=0.5)(src, src_lengths, tgt).log_probs, first)  # same seed
    model.train()
    assert not torch.equal(model(src, src_lengths, tgt).log_probs, first)  # dropout is on while training


def test_the_config_picks_the_decoder():
    expected = dict(none=DecoderRNN, location=AttnDecoderRNN, bahdanau=BahdanauDecoder, dot=LuongDecoder,
                    general=LuongDecoder, concat=LuongDecoder, scaled_dot=LuongDecoder)
    for kind, decoder_class in expected.items():
        model = build(attention=kind)
        assert type(model.decoder) is decoder_class
        if decoder_class is LuongDecoder:
            assert model.decoder.score == kind
    assert build(attention="general", input_feeding=True).decoder.input_feeding
    assert build(attention="location", location_slots=12).decoder.max_length == 12
    assert build(attention="bahdanau", bidirectional=True).decoder.key_size == 16


def test_decoder_reads_sos_then_the_gold_words_shifted_right():
    model = build(attention="bahdanau")
    src, src_lengths, tgt, _ = make_batch()
    memory, state = model.encode(src, src_lengths)
    assert torch.equal(memory.mask, src != PAD_ID)
    tgt_in = torch.cat([torch.ones(3, 1, dtype=torch.long), tgt[:, :-1]], 1)
    assert_close(model(src, src_lengths, tgt).log_probs, model.decoder(tgt_in, state, memory).log_probs)


def test_teacher_forcing_ratio_changes_the_result():
    model = build(attention="general")
    src, src_lengths, tgt, _ = make_batch()
    forced = model(src, src_lengths, tgt, teacher_forcing_ratio=1.0).log_probs
    free = model(src, src_lengths, tgt, teacher_forcing_ratio=0.0).log_probs
    assert_close(forced[:, 0], free[:, 0])  # step 0 reads SOS either way
    assert (forced[:, 1:] - free[:, 1:]).abs().max() > 1e-4


def test_count_parameters_matches_the_layers_by_hand():
    model = build(attention="none")
    E, H = 6, 8
    gru = 3 * (E * H + H * H + 2 * H)
    expected = V_SRC * E + gru + V_TGT * E + gru + H * V_TGT + V_TGT
    assert count_parameters(model) == expected
    model.encoder.embedding.weight.requires_grad_(False)
    assert count_parameters(model) == expected - V_SRC * E  # trainable parameters only


def test_inputs_on_another_device_raise_a_clear_error():
    model = build(attention="bahdanau").to("meta")
    src, src_lengths, tgt, _ = make_batch()
    with pytest.raises(ValueError, match=r"batch.to\(device\)"):
        model(src, src_lengths, tgt)


def test_config_errors_name_the_fix():
    with pytest.raises(ValueError, match="none, bahdanau, dot, general, concat, scaled_dot, scaled_general, location"):
        ModelConfig(10, 10, attention="luong")
    with pytest.raises(ValueError, match="input_feeding=False"):
        ModelConfig(10, 10, attention="bahdanau", input_feeding=True)
    with pytest.raises(ValueError, match="bidirectional=False"):
        ModelConfig(10, 10, attention="dot", bidirectional=True)
    with pytest.raises(ValueError, match="hidden_size must be a positive int"):
        ModelConfig(10, 10, hidden_size=0)
    with pytest.raises(ValueError, match="dropout"):
        ModelConfig(10, 10, dropout=1.0)
    config = ModelConfig(10, 10, attention="concat")
    assert ModelConfig(**dataclasses.asdict(config)) == config  # round-trips as a plain dict for checkpoints
    with pytest.raises(ValueError, match=r"\(B, T\)"):
        build()(*make_batch()[:2], torch.zeros(2, 3, dtype=torch.long))


# ---------------------------------------------------------------- issue 21: one place for each rule
def test_the_model_core_does_not_import_the_data_pipeline():
    code = "import course_utils.seq2seq, sys; assert 'course_utils.data' not in sys.modules, 'imported data'"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr


def test_config_and_attention_state_the_dot_rule_in_the_same_words():
    from course_utils.attention import check_key_size, make_attention

    with pytest.raises(ValueError) as from_rule:
        check_key_size("scaled_dot", 8, 16)
    with pytest.raises(ValueError) as from_config:
        ModelConfig(10, 10, attention="scaled_dot", hidden_size=8, bidirectional=True)
    with pytest.raises(ValueError) as from_factory:
        make_attention("scaled_dot", 8, 16)
    assert str(from_config.value) == str(from_factory.value) == str(from_rule.value)
    assert "\n" not in str(from_rule.value)
    assert ModelConfig(10, 10, hidden_size=8, bidirectional=True).key_size == 16
    assert ModelConfig(10, 10, hidden_size=8).key_size == 8


def test_location_slots_default_to_the_corpus_filter():
    assert ModelConfig(10, 10).location_slots == MAX_LENGTH  # every sentence the course keeps fits the exhibit's slots


# ---------------------------------------------------------------- the Translator interface

def _greedy_through_the_protocol(model: Translator, src, src_lengths, steps: int):
    """Greedy decoding with only what Translator declares: encode, decoder.step, device."""
    memory, state = model.encode(src.to(model.device), src_lengths)
    prev_tokens, outputs = torch.full((src.shape[0],), SOS_ID, device=model.device), []
    for _ in range(steps):
        step = model.decoder.step(prev_tokens, state, memory)  # log_probs (B, V)
        prev_tokens, state = step.log_probs.argmax(dim=-1), step.state  # (B,)
        outputs.append(prev_tokens)
    return torch.stack(outputs, dim=1)  # (B, T)


@pytest.mark.parametrize("architecture", ["gru", "transformer"])
def test_both_architectures_are_translators_and_decode_through_the_protocol_alone(architecture):
    from course_utils.transformer import TransformerConfig, TransformerSeq2Seq

    torch.manual_seed(0)
    model = (Seq2Seq(ModelConfig(15, 12, embedding_size=6, hidden_size=8)) if architecture == "gru" else
             TransformerSeq2Seq(TransformerConfig(15, 12, hidden_size=8, heads=2, layers=1, ff_size=8))).eval()
    assert isinstance(model, Translator) and isinstance(model.decoder, StepDecoder)
    src, src_lengths = random_padded_ids([5, 2, 4], 15, seed=1)
    with torch.no_grad():
        tokens = _greedy_through_the_protocol(model, src, src_lengths, steps=4)  # (B, 4)
        forced = model(src, src_lengths, tokens).log_probs  # (B, 4, V): teacher forced on the greedy output
    assert tokens.shape == (3, 4)
    assert torch.equal(forced.argmax(dim=-1), tokens)  # each greedy word is the argmax given the words before it
    assert not isinstance(torch.nn.Linear(2, 2), Translator)
