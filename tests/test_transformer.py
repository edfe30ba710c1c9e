"""The Transformer of notebook 09 (course_utils.transformer) and linear attention (course_utils.linear_attention)."""

import pytest
import torch
import torch.nn.functional as F

from course_utils import linear_attention as la
from course_utils.search import beam_search, force_decode, greedy_decode, sample_decode
from course_utils.seq2seq import teacher_forced_input
from course_utils.transformer import (
    MultiHeadAttention,
    TransformerConfig,
    TransformerSeq2Seq,
    causal_mask,
    scaled_dot_attention,
)
from course_utils.translate import translate


def tiny_model(src=11, tgt=13, seed=0, **fields) -> TransformerSeq2Seq:
    torch.manual_seed(seed)
    settings = dict(hidden_size=16, heads=4, layers=2, ff_size=32, dropout=0.0) | fields
    return TransformerSeq2Seq(TransformerConfig(src, tgt, **settings)).eval()


def tiny_batch():
    src = torch.tensor([[5, 6, 7, 8, 2], [9, 4, 2, 0, 0]])  # (B, S) PAD=0 after EOS=2
    tgt = torch.tensor([[4, 5, 6, 2], [7, 8, 2, 0]])  # (B, T)
    return src, torch.tensor([5, 3]), tgt


def test_multi_head_attention_equals_torch_with_copied_weights():
    torch.manual_seed(0)
    ours, theirs = MultiHeadAttention(16, 4), torch.nn.MultiheadAttention(16, 4, batch_first=True)
    with torch.no_grad():
        theirs.in_proj_weight.copy_(torch.cat([ours.query.weight, ours.key.weight, ours.value.weight]))
        theirs.in_proj_bias.copy_(torch.cat([ours.query.bias, ours.key.bias, ours.value.bias]))
        theirs.out_proj.weight.copy_(ours.out.weight)
        theirs.out_proj.bias.copy_(ours.out.bias)
    query, keys = torch.randn(2, 3, 16), torch.randn(2, 5, 16)
    mask = torch.tensor([[True] * 5, [True, True, True, False, False]])  # (B, S) True on real tokens
    context, weights = ours(query, keys, mask.unsqueeze(1))
    expected, expected_weights = theirs(query, keys, keys, key_padding_mask=~mask, average_attn_weights=False)
    torch.testing.assert_close(context, expected)
    torch.testing.assert_close(weights, expected_weights)
    assert (weights[1, ..., 3:] == 0).all()


def test_scaled_dot_attention_equals_pytorch_and_the_causal_mask_hides_the_future():
    q, k, v = torch.randn(2, 4, 6, 8), torch.randn(2, 4, 6, 8), torch.randn(2, 4, 6, 8)
    mask = causal_mask(6, 6)
    context, weights = scaled_dot_attention(q, k, v, mask)
    torch.testing.assert_close(context, F.scaled_dot_product_attention(q, k, v, is_causal=True))
    assert (weights.triu(diagonal=1) == 0).all()
    assert causal_mask(1, 4).tolist() == [[True, True, True, True]]  # the newest position sees the whole cache


def test_split_heads_is_view_then_transpose_and_merge_undoes_it():
    attention = MultiHeadAttention(8, 2)
    x = torch.arange(2 * 3 * 8.0).view(2, 3, 8)
    heads = attention.split_heads(x)  # (B, h, L, Dh)
    assert heads.shape == (2, 2, 3, 4)
    torch.testing.assert_close(heads[0, 1, 2], x[0, 2, 4:])  # head 1 of position 2 = the second half of its vector
    torch.testing.assert_close(attention.merge_heads(heads), x)


def test_step_with_the_cache_equals_the_whole_teacher_forced_pass():
    model = tiny_model()
    src, src_lengths, tgt = tiny_batch()
    output = model(src, src_lengths, tgt)  # (B, T, V), (B, T, S)
    memory, state = model.encode(src, src_lengths)
    tgt_in = teacher_forced_input(tgt)
    for t in range(tgt.shape[1]):
        step = model.decoder.step(tgt_in[:, t], state, memory)
        torch.testing.assert_close(step.log_probs, output.log_probs[:, t])
        torch.testing.assert_close(step.weights, output.attention[:, t])
        state = step.state
        assert state.position == t + 1
    assert (output.attention[1, :, 3:] == 0).all()  # no weight on the source padding
    torch.testing.assert_close(output.attention.sum(-1), torch.ones(2, 4))


def test_an_earlier_output_does_not_depend_on_later_target_words():
    model = tiny_model()
    src, src_lengths, tgt = tiny_batch()
    changed = tgt.clone()
    changed[:, 2:] = 3
    before, after = model(src, src_lengths, tgt).log_probs, model(src, src_lengths, changed).log_probs
    torch.testing.assert_close(before[:, :3], after[:, :3])  # position t reads target words before t only


def test_decoding_functions_and_translate_work_with_the_transformer(tiny_course_data):
    d = tiny_course_data
    model = tiny_model(len(d.src_vocab), len(d.tgt_vocab))
    src, src_lengths, _ = tiny_batch()
    greedy = greedy_decode(model, src, src_lengths, max_steps=6)
    assert greedy.tokens.shape[0] == 2 and greedy.attention.shape[:2] == greedy.tokens.shape
    hypotheses = beam_search(model, src[0], beam_width=3, max_steps=6)
    assert len(hypotheses) == 3
    best_greedy = greedy_decode(model, src[:1], src_lengths[:1], max_steps=6)
    assert beam_search(model, src[0], beam_width=1, max_steps=6)[0].tokens == best_greedy.tokens[0, :int(
        best_greedy.lengths[0])].tolist()
    forced = force_decode(model, src[0], torch.tensor([4, 5, 2]))
    assert forced.log_probs.shape == (3, len(d.tgt_vocab)) and forced.attention.shape == (3, 5)
    sampled = sample_decode(model, src, src_lengths, generator=torch.Generator().manual_seed(0), max_steps=6)
    assert sampled.tokens.shape[0] == 2
    result = translate(model, d.src_vocab, d.tgt_vocab, d.splits.train[0].source, beam_width=2)
    assert result.attention.shape == (len(result.output_tokens), len(result.source_tokens))


def test_cross_attention_heads_average_to_the_model_attention():
    model = tiny_model()
    src, _, tgt = tiny_batch()
    heads = model.cross_attention_heads(src[0], tgt[0])  # (layers, h, T, S)
    assert heads.shape == (2, 4, 4, 5)
    torch.testing.assert_close(heads[-1].mean(0), force_decode(model, src[0], tgt[0]).attention)


def test_without_positions_the_encoder_is_permutation_equivariant():
    model = tiny_model(positions="none")
    src = torch.tensor([[5, 6, 7, 8, 2]])
    order = torch.tensor([3, 0, 4, 1, 2])
    memory, _ = model.encode(src, torch.tensor([5]))
    permuted, _ = model.encode(src[:, order], torch.tensor([5]))
    torch.testing.assert_close(permuted.keys, memory.keys[:, order])
    with_positions = tiny_model()
    memory, _ = with_positions.encode(src, torch.tensor([5]))
    permuted, _ = with_positions.encode(src[:, order], torch.tensor([5]))
    assert not torch.allclose(permuted.keys, memory.keys[:, order], atol=1e-3)


def test_transformer_config_and_forward_refuse_what_they_cannot_do():
    with pytest.raises(ValueError, match="multiple of heads"):
        TransformerConfig(10, 12, hidden_size=10, heads=4)
    with pytest.raises(ValueError, match="teacher forcing"):
        tiny_model()(*tiny_batch(), teacher_forcing_ratio=0.5)


def test_causal_linear_attention_parallel_equals_recurrent():
    torch.manual_seed(0)
    q, k, v = torch.randn(2, 3, 7, 4), torch.randn(2, 3, 7, 4), torch.randn(2, 3, 7, 5)
    parallel = la.causal_linear_attention(q, k, v)
    torch.testing.assert_close(la.recurrent_linear_attention(q, k, v), parallel)
    assert parallel.shape == (2, 3, 7, 5)
    assert (la._elu_feature_map(torch.linspace(-5, 5, 50)) > 0).all()
    # position 0 sees only itself: its output is its own value
    torch.testing.assert_close(parallel[..., 0, :], v[..., 0, :], atol=1e-5, rtol=1e-5)
