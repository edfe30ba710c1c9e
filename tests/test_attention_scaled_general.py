"""The scaled general score (the lecture recipe's Luong general): q^T W k / sqrt(K), tested against the formula."""
import math

import torch

from course_utils.attention import ATTENTION_SCORES, GeneralAttention, ScaledGeneralAttention, make_attention
from course_utils.seq2seq import ATTENTION_KINDS, LUONG_SCORES


def test_scaled_general_is_general_divided_by_the_square_root_of_the_key_size():
    torch.manual_seed(0)
    B, T, S, Hq, K = 2, 3, 5, 4, 9
    query, keys = torch.randn(B, T, Hq), torch.randn(B, S, K)  # (B, T, Hq), (B, S, K)
    mask = torch.tensor([[True] * 5, [True] * 3 + [False] * 2])  # (B, S)
    scaled = ScaledGeneralAttention(Hq, K)
    plain = GeneralAttention(Hq, K)
    plain.load_state_dict(scaled.state_dict())
    W = scaled.linear.weight.T  # (Hq, K): score = q^T W k
    by_hand = torch.einsum("bth,hk,bsk->bts", query, W, keys) / math.sqrt(K)  # (B, T, S)
    torch.testing.assert_close(scaled.score(query, keys, None), by_hand)
    torch.testing.assert_close(scaled.score(query, keys, None), plain.score(query, keys, None) / 3.0)
    context, weights = scaled(query, keys, mask)
    assert context.shape == (B, T, K) and weights.shape == (B, T, S)
    assert torch.all(weights[1, :, 3:] == 0)
    expected = torch.softmax(by_hand.masked_fill(~mask[:, None, :], -math.inf), dim=-1)  # (B, T, S)
    torch.testing.assert_close(weights, expected)


def test_scaled_general_is_a_known_kind_everywhere():
    assert "scaled_general" in ATTENTION_SCORES and "scaled_general" in ATTENTION_KINDS
    assert "scaled_general" in LUONG_SCORES
    assert isinstance(make_attention("scaled_general", 4, 6), ScaledGeneralAttention)
