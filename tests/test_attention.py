"""Tests for course_utils.attention: each scorer against its formula, masking, shapes, init, gradients."""
import math

import pytest
import torch
import torch.nn.functional as F
from torch.testing import assert_close

from course_utils.attention import (
    ATTENTION_SCORES,
    AttentionOutput,
    BahdanauAttention,
    ConcatAttention,
    DotAttention,
    GeneralAttention,
    ScaledDotAttention,
    _needs_equal_sizes,
    check_key_size,
    make_attention,
    masked_softmax,
)

B, T, S, HQ, K, A = 3, 4, 5, 6, 6, 7
LENGTHS = torch.tensor([5, 2, 3])


def make_inputs(seed=0, query_size=HQ, key_size=K):
    generator = torch.Generator().manual_seed(seed)
    query = torch.randn(B, query_size, generator=generator)
    keys = torch.randn(B, S, key_size, generator=generator)
    mask = torch.arange(S).unsqueeze(0) < LENGTHS.unsqueeze(1)  # (B, S)
    keys = keys * mask.unsqueeze(-1)  # zeros at pads, like the encoder's outputs
    return query, keys, mask


def build(kind, query_size=HQ, key_size=K):
    torch.manual_seed(1)
    return make_attention(kind, query_size, key_size, attention_size=A)


def hand_attention(score_fn, query, keys, mask):
    """Score each (b, s) pair one at a time with `score_fn(q (Hq,), k (K,)) -> scalar`, softmax over real keys."""
    contexts, all_weights = [], []
    for b in range(query.shape[0]):
        length = int(mask[b].sum())
        scores = torch.stack([score_fn(query[b], keys[b, s]) for s in range(length)])
        weights = torch.cat([torch.softmax(scores, dim=0), torch.zeros(keys.shape[1] - length)])
        all_weights.append(weights)
        contexts.append((weights.unsqueeze(1) * keys[b]).sum(0))
    return torch.stack(contexts), torch.stack(all_weights)


# ---------------------------------------------------------------- masked softmax

@pytest.mark.parametrize("shape", [(B, S), (B, T, S)])
def test_masked_softmax_rows_sum_to_one_and_pads_are_exactly_zero(shape):
    _, _, mask = make_inputs()
    scores = torch.randn(*shape) * 10
    weights = masked_softmax(scores, mask)
    assert weights.shape == scores.shape
    assert_close(weights.sum(-1), torch.ones(shape[:-1]))
    pad = ~mask if len(shape) == 2 else (~mask).unsqueeze(1).expand(shape)
    assert (weights[pad] == 0).all()
    assert (weights[~pad] > 0).all()


def test_masked_softmax_equals_softmax_over_the_real_positions_only():
    _, _, mask = make_inputs()
    scores = torch.randn(B, S)
    weights = masked_softmax(scores, mask)
    for b, length in enumerate(LENGTHS.tolist()):
        assert_close(weights[b, :length], torch.softmax(scores[b, :length], dim=0))


def test_masked_softmax_rejects_bad_masks():
    scores = torch.randn(2, 3)
    with pytest.raises(ValueError, match="bool"):
        masked_softmax(scores, torch.ones(2, 3, dtype=torch.long))
    with pytest.raises(ValueError, match="at least one True"):
        masked_softmax(scores, torch.tensor([[True, False, False], [False, False, False]]))
    with pytest.raises(ValueError, match=r"mask \(B, S\)"):
        masked_softmax(scores, torch.ones(2, 4, dtype=torch.bool))


# ---------------------------------------------------------------- each scorer equals its formula

def test_bahdanau_equals_v_tanh_wq_plus_uk():
    attention = build("bahdanau")
    assert isinstance(attention, BahdanauAttention)
    W, U, v = attention.query_layer.weight, attention.key_layer.weight, attention.energy_layer.weight[0]
    query, keys, mask = make_inputs()
    expected = hand_attention(lambda q, k: v @ torch.tanh(W @ q + U @ k), query, keys, mask)
    context, weights = attention(query, keys, mask)
    assert_close(context, expected[0])
    assert_close(weights, expected[1])


def test_bahdanau_uses_the_keys_projected_once():
    attention = build("bahdanau")
    query, keys, mask = make_inputs()
    projected = attention.project_keys(keys)
    assert projected.shape == (B, S, A)
    assert_close(attention(query, keys, mask, projected_keys=projected).context, attention(query, keys, mask).context)
    calls = []
    attention.key_layer.register_forward_hook(lambda *args: calls.append(1))
    attention(query, keys, mask, projected_keys=projected)
    assert calls == []  # with projected keys given, U k is not recomputed


def test_dot_equals_q_dot_k():
    attention = build("dot")
    assert isinstance(attention, DotAttention)
    query, keys, mask = make_inputs()
    expected = hand_attention(lambda q, k: q @ k, query, keys, mask)
    context, weights = attention(query, keys, mask)
    assert_close(context, expected[0])
    assert_close(weights, expected[1])


def test_scaled_dot_equals_q_dot_k_over_sqrt_k():
    attention = build("scaled_dot")
    assert isinstance(attention, ScaledDotAttention)
    query, keys, mask = make_inputs()
    expected = hand_attention(lambda q, k: q @ k / math.sqrt(K), query, keys, mask)
    context, weights = attention(query, keys, mask)
    assert_close(context, expected[0])
    assert_close(weights, expected[1])


@pytest.mark.parametrize("steps", [1, T])
def test_scaled_dot_matches_torch_scaled_dot_product_attention(steps):
    query, keys, mask = make_inputs()
    queries = torch.randn(B, steps, K)
    sdpa = F.scaled_dot_product_attention(queries, keys, keys, attn_mask=mask.unsqueeze(1))  # bool: True = attend
    assert_close(ScaledDotAttention()(queries, keys, mask).context, sdpa)


def test_general_equals_q_w_k():
    attention = build("general", query_size=4, key_size=K)
    assert isinstance(attention, GeneralAttention)
    W = attention.linear.weight.T  # (Hq, K)
    query, keys, mask = make_inputs(query_size=4)
    expected = hand_attention(lambda q, k: q @ W @ k, query, keys, mask)
    context, weights = attention(query, keys, mask)
    assert_close(context, expected[0])
    assert_close(weights, expected[1])


def test_concat_equals_v_tanh_w_of_the_concatenation():
    attention = build("concat", query_size=4, key_size=K)  # sizes differ: a sum q + k would not even exist
    assert isinstance(attention, ConcatAttention)
    W, v = attention.linear.weight, attention.energy_layer.weight[0]
    assert W.shape == (A, 4 + K)
    query, keys, mask = make_inputs(query_size=4)
    expected = hand_attention(lambda q, k: v @ torch.tanh(W @ torch.cat([q, k])), query, keys, mask)
    context, weights = attention(query, keys, mask)
    assert_close(context, expected[0])
    assert_close(weights, expected[1])


def test_concat_is_not_the_articles_sum_variant():
    """The widely read article computes v^T tanh(W (q + k)); a true concatenation gives different weights."""
    attention = build("concat")
    W, v = attention.linear.weight, attention.energy_layer.weight[0]
    W_query = W[:, :HQ]  # the part of W that multiplies q; the sum variant applies one such matrix to q + k
    query, keys, mask = make_inputs()
    summed = hand_attention(lambda q, k: v @ torch.tanh(W_query @ (q + k)), query, keys, mask)
    weights = attention(query, keys, mask).weights
    assert (weights - summed[1]).abs().max() > 1e-3


# ---------------------------------------------------------------- one interface for all scorers

@pytest.mark.parametrize("kind", ATTENTION_SCORES)
def test_shapes_for_one_step_and_for_all_steps(kind):
    attention = build(kind)
    query, keys, mask = make_inputs()
    one = attention(query, keys, mask)
    assert isinstance(one, AttentionOutput)
    assert one.context.shape == (B, K) and one.weights.shape == (B, S)
    queries = torch.randn(B, T, HQ)
    many = attention(queries, keys, mask)
    assert many.context.shape == (B, T, K) and many.weights.shape == (B, T, S)
    for t in range(T):  # all steps at once equals one step at a time
        step = attention(queries[:, t], keys, mask)
        assert_close(many.context[:, t], step.context)
        assert_close(many.weights[:, t], step.weights)


@pytest.mark.parametrize("kind", ATTENTION_SCORES)
def test_weights_sum_to_one_and_are_exactly_zero_on_pads(kind):
    query, keys, mask = make_inputs()
    weights = build(kind)(query, keys, mask).weights
    assert_close(weights.sum(-1), torch.ones(B))
    assert (weights[~mask] == 0).all()


@pytest.mark.parametrize("kind", ATTENTION_SCORES)
def test_modules_keep_no_state_between_calls(kind):
    attention = build(kind)
    before = dict(vars(attention))
    query, keys, mask = make_inputs()
    attention(query, keys, mask)
    assert vars(attention).keys() == before.keys()
    assert not any(isinstance(value, torch.Tensor) for value in vars(attention).values())


@pytest.mark.parametrize("kind", ATTENTION_SCORES)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_parameters_are_initialised_finite_and_bounded(kind, seed):
    torch.manual_seed(seed)
    attention = make_attention(kind, 256, 256)
    for name, parameter in attention.named_parameters():
        assert torch.isfinite(parameter).all(), name
        assert parameter.abs().max() <= 1.0, name  # uniform(+-1/sqrt(fan_in)); garbage memory would be huge
        assert parameter.abs().sum() > 0, name


@pytest.mark.parametrize("kind", ["bahdanau", "general", "concat"])
def test_gradients_reach_every_parameter(kind):
    attention = build(kind)
    query, keys, mask = make_inputs()
    query.requires_grad_(True)
    attention(query, keys, mask).context.pow(2).sum().backward()
    assert query.grad is not None and query.grad.abs().sum() > 0
    for name, parameter in attention.named_parameters():
        assert parameter.grad is not None and parameter.grad.abs().sum() > 0, name


def test_parameter_free_scorers_have_no_parameters():
    assert list(DotAttention().parameters()) == [] and list(ScaledDotAttention().parameters()) == []


@pytest.mark.parametrize("kind", ["dot", "scaled_dot"])
def test_dot_scorers_name_the_size_mismatch(kind):
    with pytest.raises(ValueError, match="general"):
        make_attention(kind, 4, 8)
    query, keys, mask = make_inputs(query_size=4)
    attention = DotAttention() if kind == "dot" else ScaledDotAttention()
    with pytest.raises(ValueError, match="query size == key size"):
        attention(query, keys, mask)


def test_the_dot_rule_is_one_function_that_names_the_problem_and_the_fix():
    assert [kind for kind in ATTENTION_SCORES if _needs_equal_sizes(kind)] == ["dot", "scaled_dot"]
    for kind in ATTENTION_SCORES:
        check_key_size(kind, 4, 4)  # equal sizes: every scorer
    check_key_size("general", 4, 8)  # a scorer with a W maps between the sizes
    with pytest.raises(ValueError) as raised:
        check_key_size("dot", 4, 8)
    message = str(raised.value)
    assert "\n" not in message and "keys of the decoder's size" in message
    assert "got query size 4 and key size 8" in message
    assert "'general'" in message and "bidirectional=False" in message
    query, keys, mask = make_inputs(query_size=4, key_size=8)
    with pytest.raises(ValueError) as from_module:
        DotAttention()(query, keys, mask)
    assert str(from_module.value) == message  # the module checks with the same rule


def test_bad_kind_and_bad_shapes_raise_clear_errors():
    with pytest.raises(ValueError, match="bahdanau, dot, general, concat, scaled_dot"):
        make_attention("luong", HQ, K)
    query, keys, mask = make_inputs()
    with pytest.raises(ValueError, match="batch-first"):
        build("general")(query, keys.transpose(0, 1), mask)


# ---------------------------------------------------------------- edge shapes and content dependence (issue 11)
def formula(kind, attention, query_size, key_size):
    """The paper's score(q (Hq,), k (K,)) -> scalar for `attention`'s own weights; a new scorer must add its own."""
    if kind == "bahdanau":
        W, U, v = attention.query_layer.weight, attention.key_layer.weight, attention.energy_layer.weight[0]
        return lambda q, k: v @ torch.tanh(W @ q + U @ k)
    if kind == "dot":
        return lambda q, k: q @ k
    if kind == "scaled_dot":
        return lambda q, k: q @ k / math.sqrt(key_size)
    if kind in ("general", "scaled_general"):
        W = attention.linear.weight.T  # (Hq, K)
        scale = math.sqrt(key_size) if kind == "scaled_general" else 1.0
        return lambda q, k: q @ W @ k / scale
    assert kind == "concat", f"no formula for the scorer {kind!r}: add it here"
    W, v = attention.linear.weight, attention.energy_layer.weight[0]
    return lambda q, k: v @ torch.tanh(W @ torch.cat([q, k]))


EDGE_SHAPES = {  # name: per-sentence real lengths, padded to the longest (source length S = max)
    "batch of one": [5],
    "source length one": [1, 1, 1],
    "one real token among pads": [1, 4],
    "batch of one, one token": [1],
}


@pytest.mark.parametrize("shape", EDGE_SHAPES)
@pytest.mark.parametrize("kind", ATTENTION_SCORES)
def test_every_scorer_equals_its_formula_on_edge_shapes(kind, shape):
    lengths = torch.tensor(EDGE_SHAPES[shape])
    batch, source_length = len(lengths), int(lengths.max())
    generator = torch.Generator().manual_seed(3)
    mask = torch.arange(source_length).unsqueeze(0) < lengths.unsqueeze(1)  # (B, S)
    keys = torch.randn(batch, source_length, K, generator=generator) * mask.unsqueeze(-1)  # (B, S, K)
    query = torch.randn(batch, HQ, generator=generator)  # (B, Hq)
    attention = build(kind)
    expected_context, expected_weights = hand_attention(formula(kind, attention, HQ, K), query, keys, mask)
    context, weights = attention(query, keys, mask)
    assert context.shape == (batch, K) and weights.shape == (batch, source_length)
    assert_close(context, expected_context)
    assert_close(weights, expected_weights)
    single = lengths == 1
    assert (weights[single, 0] == 1).all()  # one real token takes all the weight...
    assert_close(context[single], keys[single, 0])  # ...and the context is that key
    many = attention(query.unsqueeze(1).expand(-1, T, -1), keys, mask)  # (B, T, Hq): all steps at once
    assert_close(many.weights, weights.unsqueeze(1).expand(-1, T, -1))


@pytest.mark.parametrize("kind", ATTENTION_SCORES)
def test_every_scorer_looks_at_the_content_of_keys_and_query(kind):
    """Content-based attention: other keys (or another query) give other weights; the 2017 location exhibit's
    weights would not move when the keys change (test_decoder)."""
    attention = build(kind)
    query, keys, mask = make_inputs()
    weights = attention(query, keys, mask).weights
    other_keys = make_inputs(seed=5)[1]
    assert (attention(query, other_keys, mask).weights - weights).abs().max() > 1e-3
    other_query = make_inputs(seed=6)[0]
    assert (attention(other_query, keys, mask).weights - weights).abs().max() > 1e-3
    swapped = keys.clone()
    swapped[0, [0, 1]] = keys[0, [1, 0]]  # the same keys in another order: the weights follow the keys
    moved = attention(query, swapped, mask).weights
    assert_close(moved[0, [0, 1]], weights[0, [1, 0]])
    assert_close(moved[1:], weights[1:])


def test_luong_fast_path_gradients_for_the_additive_score_reach_the_attention():
    """The all-steps form of the additive score gives the same gradients as one step at a time."""
    attention = build("bahdanau")
    _, keys, mask = make_inputs()
    queries = torch.randn(B, T, HQ, requires_grad=True)
    attention(queries, keys, mask).context.pow(2).sum().backward()
    all_at_once = {name: p.grad.clone() for name, p in attention.named_parameters()}, queries.grad.clone()
    attention.zero_grad()
    queries.grad = None
    sum(attention(queries[:, t], keys, mask).context.pow(2).sum() for t in range(T)).backward()
    for name, parameter in attention.named_parameters():
        assert all_at_once[0][name].abs().sum() > 0
        assert_close(parameter.grad, all_at_once[0][name])
    assert_close(queries.grad, all_at_once[1])
