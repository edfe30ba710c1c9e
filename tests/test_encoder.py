"""Tests for course_utils.encoder: shapes, packing (padding never reaches the state), bridge, errors, gradients."""
import pytest
import torch
from helpers import random_padded_ids
from torch.testing import assert_close

from course_utils.encoder import EncoderOutput, EncoderRNN
from course_utils.vocab import PAD_ID

V, E, H = 20, 8, 12


def padded_batch(lengths, seed=0):
    """Random sentences of the given lengths (last id EOS), PAD-padded to the longest: (B, S), (B,)."""
    return random_padded_ids(lengths, V, seed)


def build(bidirectional=False, decoder_hidden_size=None, dropout=0.1):
    torch.manual_seed(0)
    return EncoderRNN(V, E, H, bidirectional=bidirectional, dropout=dropout,
                      decoder_hidden_size=decoder_hidden_size).eval()


@pytest.mark.parametrize("bidirectional", [False, True])
def test_shapes_and_zero_outputs_at_pads(bidirectional):
    encoder = build(bidirectional)
    src, lengths = padded_batch([4, 6, 2])
    out = encoder(src, lengths)
    assert isinstance(out, EncoderOutput)
    assert encoder.key_size == (2 * H if bidirectional else H)
    assert out.outputs.shape == (3, 6, encoder.key_size)
    assert out.final.shape == (3, H)
    pads = src == PAD_ID
    assert (out.outputs[pads] == 0).all()
    assert (out.outputs[~pads].abs().sum(-1) > 0).all()
    assert (encoder.bridge is not None) == bidirectional


@pytest.mark.parametrize("bidirectional", [False, True])
def test_a_sentence_alone_equals_the_same_sentence_padded_in_a_batch(bidirectional):
    encoder = build(bidirectional)
    src, lengths = padded_batch([3, 7, 5])  # unsorted lengths: enforce_sorted=False must restore the order
    batch = encoder(src, lengths)
    for row, length in enumerate(lengths.tolist()):
        alone = encoder(src[row:row + 1, :length], lengths[row:row + 1])
        assert_close(batch.outputs[row, :length], alone.outputs[0])
        assert_close(batch.final[row], alone.final[0])


def test_the_unpacked_gru_takes_its_final_state_from_the_pads():
    """The current PyTorch tutorial's encoder: without packing, a short sentence's state depends on its padding."""
    encoder = build()
    src, lengths = padded_batch([3, 7])
    alone = encoder(src[:1, :3], lengths[:1])
    assert_close(encoder(src[:1, :3], lengths[:1], packed=False).final, alone.final)  # no pads: no difference
    unpacked = encoder(src, lengths, packed=False)
    assert (unpacked.final[0] - alone.final[0]).abs().max() > 1e-3  # 4 PAD steps changed the state
    assert unpacked.outputs[0, 3:].abs().sum() > 0  # and the pads got outputs, which attention could pick
    assert_close(encoder(src, lengths).final[0], alone.final[0])  # the packed encoder is immune


def test_bidirectional_final_state_is_the_bridge_of_both_directions_at_the_right_ends():
    encoder = build(bidirectional=True)
    src, lengths = padded_batch([3, 6])
    out = encoder(src, lengths)
    for row, length in enumerate(lengths.tolist()):
        forward_last = out.outputs[row, length - 1, :H]  # the forward GRU ends on the last real token
        backward_last = out.outputs[row, 0, H:]  # the backward GRU ends on the first token
        expected = torch.tanh(encoder.bridge(torch.cat([forward_last, backward_last])))
        assert_close(out.final[row], expected)


def test_unidirectional_final_state_is_the_last_real_output():
    encoder = build()
    src, lengths = padded_batch([3, 6])
    out = encoder(src, lengths)
    assert_close(out.final, out.outputs[torch.arange(2), lengths - 1])


def test_bridge_to_a_different_decoder_size():
    encoder = build(decoder_hidden_size=5)
    src, lengths = padded_batch([3, 6])
    out = encoder(src, lengths)
    assert out.final.shape == (2, 5)
    assert out.final.abs().max() <= 1  # tanh


def test_padding_embedding_is_zero_and_parameters_are_finite():
    encoder = build(bidirectional=True)
    assert encoder.embedding.padding_idx == PAD_ID
    assert (encoder.embedding.weight[PAD_ID] == 0).all()
    for name, parameter in encoder.named_parameters():
        assert torch.isfinite(parameter).all() and parameter.abs().max() < 10, name


@pytest.mark.parametrize("bidirectional", [False, True])
def test_gradients_reach_every_parameter(bidirectional):
    encoder = build(bidirectional).train()
    src, lengths = padded_batch([4, 6, 2])
    out = encoder(src, lengths)
    (out.outputs.pow(2).sum() + out.final.pow(2).sum()).backward()
    for name, parameter in encoder.named_parameters():
        assert parameter.grad is not None and parameter.grad.abs().sum() > 0, name
    assert (encoder.embedding.weight.grad[PAD_ID] == 0).all()  # padding_idx: the PAD row never learns


def test_eval_mode_is_deterministic_and_train_mode_uses_dropout():
    encoder = build(dropout=0.5)
    src, lengths = padded_batch([4, 6])
    assert torch.equal(encoder(src, lengths).outputs, encoder(src, lengths).outputs)
    encoder.train()
    assert not torch.equal(encoder(src, lengths).outputs, encoder(src, lengths).outputs)


def test_int32_lengths_are_accepted():
    encoder = build()
    src, lengths = padded_batch([4, 6])
    assert_close(encoder(src, lengths.int()).final, encoder(src, lengths).final)


def test_bad_inputs_raise_errors_that_name_the_fix():
    encoder = build()
    src, lengths = padded_batch([4, 6])
    with pytest.raises(ValueError, match="unsqueeze"):
        encoder(src[0], lengths[:1])
    with pytest.raises(ValueError, match="one length per row"):
        encoder(src, lengths[:1])
    with pytest.raises(ValueError, match=r"\[1, S=6\]"):
        encoder(src, torch.tensor([0, 6]))
    with pytest.raises(ValueError, match=r"\[1, S=6\]"):
        encoder(src, torch.tensor([4, 7]))
    with pytest.raises(ValueError, match="LongTensor"):
        encoder(src.float(), lengths)
