"""Tests for course_utils.decoder: the shared step interface, each decoder's defining behaviour, the Luong fast
path (course_utils.fast), teacher forcing, the 2017 location-based exhibit, gradients."""
import pytest
import torch
import torch.nn.functional as F
from torch.testing import assert_close

from course_utils.decoder import (
    AttnDecoderRNN,
    BahdanauDecoder,
    DecoderOutput,
    DecoderRNN,
    DecoderState,
    LuongDecoder,
    Memory,
    StepOutput,
)
from course_utils.fast.recurrences import FastDecoder
from course_utils.vocab import PAD_ID, SOS_ID

B, S, T, V, E, H, MAXLEN = 3, 5, 4, 11, 6, 8, 7
LENGTHS = torch.tensor([5, 2, 4])

DECODERS = {
    "none": lambda key_size: DecoderRNN(E, H, V, dropout=0.1, key_size=key_size),
    "location": lambda key_size: AttnDecoderRNN(H, V, dropout=0.1, max_length=MAXLEN, key_size=key_size),
    "bahdanau": lambda key_size: BahdanauDecoder(E, H, key_size, V, dropout=0.1),
    "dot": lambda key_size: LuongDecoder(E, H, key_size, V, score="dot", dropout=0.1),
    "general": lambda key_size: LuongDecoder(E, H, key_size, V, score="general", dropout=0.1),
    "concat": lambda key_size: LuongDecoder(E, H, key_size, V, score="concat", dropout=0.1),
    "scaled_dot": lambda key_size: LuongDecoder(E, H, key_size, V, score="scaled_dot", dropout=0.1),
    "general+feeding": lambda key_size: LuongDecoder(E, H, key_size, V, dropout=0.1, input_feeding=True),
    "luong+additive": lambda key_size: LuongDecoder(E, H, key_size, V, score="bahdanau", dropout=0.1),
}
MASKED = [kind for kind in DECODERS if kind not in ("none", "location")]
LUONG_SCORES = ["dot", "general", "concat", "scaled_dot"]
DOT_SCORES = ("dot", "scaled_dot")  # need keys of the decoder's size: refuse 2H keys (test_dot_scores_refuse_2h_keys)
# every (Luong decoder, key size) that can be built: the additive score too; dot scores only with H-wide keys
FAST_PATH_CASES = [(kind, key_size) for kind in [*LUONG_SCORES, "luong+additive"] for key_size in (H, 2 * H)
                   if not (kind in DOT_SCORES and key_size != H)]
SHAPE_CASES = [(kind, key_size) for kind in DECODERS for key_size in (H, 2 * H)
               if not (kind in DOT_SCORES and key_size != H)]


def build(kind, key_size=H, seed=0):
    torch.manual_seed(seed)
    return DECODERS[kind](key_size).eval()


def make_inputs(key_size=H, seed=0, source_length=S):
    generator = torch.Generator().manual_seed(seed)
    mask = torch.arange(source_length).unsqueeze(0) < LENGTHS.clamp(max=source_length).unsqueeze(1)  # (B, S)
    keys = torch.randn(B, source_length, key_size, generator=generator) * mask.unsqueeze(-1)
    encoder_final = torch.randn(B, H, generator=generator).tanh()
    tgt_in = torch.randint(4, V, (B, T), generator=generator)
    tgt_in[:, 0] = SOS_ID
    return keys, mask, encoder_final, tgt_in


def start(decoder, key_size=H, seed=0):
    keys, mask, encoder_final, tgt_in = make_inputs(key_size, seed)
    return decoder.prepare_memory(keys, mask), decoder.init_state(encoder_final), tgt_in


def call_counter(module):
    calls = []
    module.register_forward_hook(lambda *args: calls.append(1))
    return calls


# ---------------------------------------------------------------- the shared interface

@pytest.mark.parametrize("kind", DOT_SCORES)
def test_dot_scores_refuse_2h_keys(kind):
    with pytest.raises(ValueError, match="general"):
        DECODERS[kind](2 * H)  # dot scores need keys of the decoder's size


@pytest.mark.parametrize("kind, key_size", SHAPE_CASES)
def test_step_and_forward_shapes(kind, key_size):
    decoder = build(kind, key_size)
    memory, state, tgt_in = start(decoder, key_size)
    assert decoder.hidden_size == H and decoder.output_size == V
    step = decoder.step(tgt_in[:, 0], state, memory)
    assert isinstance(step, StepOutput) and isinstance(step.state, DecoderState)
    assert step.log_probs.shape == (B, V)
    assert_close(step.log_probs.logsumexp(-1), torch.zeros(B))
    assert step.state.hidden.shape == (B, H)
    out = decoder(tgt_in, state, memory)
    assert isinstance(out, DecoderOutput) and out.log_probs.shape == (B, T, V)
    width = {"none": None, "location": MAXLEN}.get(kind, S)
    if width is None:
        assert step.weights is None and out.weights is None
    else:
        assert step.weights.shape == (B, width) and out.weights.shape == (B, T, width)
        assert_close(out.weights.sum(-1), torch.ones(B, T))


@pytest.mark.parametrize("kind", MASKED)
def test_attention_is_exactly_zero_on_pads(kind):
    decoder = build(kind)
    memory, state, tgt_in = start(decoder)
    weights = decoder(tgt_in, state, memory).weights  # (B, T, S)
    assert (weights[(~memory.mask).unsqueeze(1).expand(-1, T, -1)] == 0).all()
    assert (weights[memory.mask.unsqueeze(1).expand(-1, T, -1)] > 0).all()


@pytest.mark.parametrize("kind", DECODERS)
def test_gradients_reach_every_parameter(kind):
    decoder = build(kind).train()
    memory, state, tgt_in = start(decoder)
    gold = torch.roll(tgt_in, -1, dims=1)
    log_probs = decoder(tgt_in, state, memory).log_probs
    F.nll_loss(log_probs.reshape(-1, V), gold.reshape(-1)).backward()
    for name, parameter in decoder.named_parameters():
        assert parameter.grad is not None and parameter.grad.abs().sum() > 0, name


@pytest.mark.parametrize("kind", DECODERS)
def test_parameters_are_initialised_and_pad_embedding_is_zero(kind):
    decoder = build(kind)
    for name, parameter in decoder.named_parameters():
        assert torch.isfinite(parameter).all() and parameter.abs().max() < 10, name
    assert (decoder.embedding.weight[PAD_ID] == 0).all()


def test_memory_and_state_index_select_pick_and_repeat_rows():
    decoder = build("general+feeding")
    memory, state, _ = start(build("bahdanau"))
    index = torch.tensor([2, 2, 0])
    picked = memory.index_select(index)
    assert isinstance(picked, Memory)
    assert torch.equal(picked.keys, memory.keys[index]) and torch.equal(picked.mask, memory.mask[index])
    assert torch.equal(picked.projected_keys, memory.projected_keys[index])
    assert build("general").prepare_memory(memory.keys, memory.mask).index_select(index).projected_keys is None
    state = decoder.init_state(torch.randn(B, H))._replace(input_feed=torch.randn(B, H))
    picked_state = state.index_select(index)
    assert torch.equal(picked_state.hidden, state.hidden[index])
    assert torch.equal(picked_state.input_feed, state.input_feed[index])
    assert DecoderState(state.hidden, None).index_select(index).input_feed is None


# ---------------------------------------------------------------- teacher forcing

@pytest.mark.parametrize("kind", ["none", "location", "bahdanau", "general", "general+feeding"])
def test_teacher_forcing_ratio_zero_feeds_back_the_decoders_own_argmax(kind):
    decoder = build(kind)
    memory, state, tgt_in = start(decoder)
    out = decoder(tgt_in, state, memory, teacher_forcing_ratio=0.0)
    tokens, expected = tgt_in[:, 0], []
    for _ in range(T):
        step = decoder.step(tokens, state, memory)
        state, tokens = step.state, step.log_probs.argmax(-1)
        expected.append(step.log_probs)
    assert_close(out.log_probs, torch.stack(expected, dim=1))


@pytest.mark.parametrize("kind", ["bahdanau", "general"])
def test_teacher_forcing_ratio_one_feeds_the_gold_words_and_draws_no_random_numbers(kind):
    decoder = build(kind)
    memory, state, tgt_in = start(decoder)
    rng_before = torch.get_rng_state()
    out = decoder(tgt_in, state, memory, teacher_forcing_ratio=1.0)
    assert torch.equal(torch.get_rng_state(), rng_before)
    for t in range(T):
        step = decoder.step(tgt_in[:, t], state, memory)
        state = step.state
        assert_close(out.log_probs[:, t], step.log_probs)


def test_teacher_forcing_flips_one_seeded_coin_per_step_after_the_first():
    decoder = build("bahdanau")
    memory, state, tgt_in = start(decoder)
    torch.manual_seed(7)
    first = decoder(tgt_in, state, memory, teacher_forcing_ratio=0.5).log_probs
    after_forward = torch.get_rng_state()
    torch.manual_seed(7)
    torch.rand(T - 1)  # exactly T - 1 coins were drawn
    assert torch.equal(torch.get_rng_state(), after_forward)
    torch.manual_seed(7)
    assert torch.equal(decoder(tgt_in, state, memory, teacher_forcing_ratio=0.5).log_probs, first)


# ---------------------------------------------------------------- the 2017 location-based exhibit

def test_location_weights_do_not_change_when_the_encoder_outputs_change():
    decoder = build("location")
    keys, mask, encoder_final, tgt_in = make_inputs()
    state = decoder.init_state(encoder_final)
    first = decoder(tgt_in, state, decoder.prepare_memory(keys, mask), teacher_forcing_ratio=1.0)
    other_keys = torch.randn_like(keys) * mask.unsqueeze(-1)
    second = decoder(tgt_in, state, decoder.prepare_memory(other_keys, mask), teacher_forcing_ratio=1.0)
    assert_close(first.weights[:, 0], second.weights[:, 0])  # step 0: same word, same state -> same weights
    assert (first.log_probs[:, 0] - second.log_probs[:, 0]).abs().max() > 1e-4  # though the source changed
    bahdanau = build("bahdanau")  # a content-based scorer does look at the keys
    state = bahdanau.init_state(encoder_final)
    a = bahdanau.step(tgt_in[:, 0], state, bahdanau.prepare_memory(keys, mask)).weights
    b = bahdanau.step(tgt_in[:, 0], state, bahdanau.prepare_memory(other_keys, mask)).weights
    assert (a - b).abs().max() > 1e-4


def test_location_weights_cover_all_max_length_slots_unmasked():
    decoder = build("location")
    memory, state, tgt_in = start(decoder)
    assert memory.keys.shape == (B, MAXLEN, H)
    assert (memory.keys[:, S:] == 0).all()  # zero-padded like the tutorial's encoder_outputs buffer
    weights = decoder(tgt_in, state, memory).weights  # (B, T, MAXLEN)
    assert_close(weights.sum(-1), torch.ones(B, T))
    assert (weights[:, :, S:] > 0).all()  # probability mass wasted on slots past the sentence


def test_location_cannot_attend_past_max_length():
    decoder = build("location")
    keys, mask, _, _ = make_inputs(source_length=MAXLEN + 1)
    with pytest.raises(ValueError, match="MAX_LENGTH"):
        decoder.prepare_memory(keys, mask)
    keys, mask, _, _ = make_inputs(source_length=MAXLEN)
    assert decoder.prepare_memory(keys, mask).keys.shape == (B, MAXLEN, H)  # exactly max_length still fits


@pytest.mark.parametrize("kind", list(DECODERS))
def test_each_decoder_states_its_source_length_limit(kind):
    decoder = build(kind)
    if kind == "location":
        assert decoder.max_source_length == MAXLEN
        decoder.check_source_length(MAXLEN)  # exactly max_length fits
        with pytest.raises(ValueError) as raised:
            decoder.check_source_length(MAXLEN + 1)
        message = str(raised.value)
        assert "\n" not in message and "MAX_LENGTH" in message and "larger max_length" in message
        assert f"max_length={MAXLEN}" in message and f"S={MAXLEN + 1}" in message
    else:
        assert decoder.max_source_length is None  # content-based (or no) attention reads any length
        decoder.check_source_length(10_000)


def test_location_default_slots_are_the_corpus_filter():
    from course_utils.vocab import MAX_LENGTH

    assert AttnDecoderRNN(H, V).max_source_length == MAX_LENGTH  # every sentence the course keeps fits


@pytest.mark.parametrize("kind", ["bahdanau", "general", "general+feeding", "location"])
def test_weights_given_to_a_step_replace_the_scorers_for_that_step(kind):
    decoder = build(kind)
    memory, state, tgt_in = start(decoder)
    own = decoder.step(tgt_in[:, 0], state, memory)
    assert_close(decoder.step(tgt_in[:, 0], state, memory, own.weights).log_probs, own.log_probs)  # its own: same
    uniform = memory.mask.float() / memory.mask.sum(dim=1, keepdim=True)  # (B, S) 1 / S on the real tokens
    replaced = decoder.step(tgt_in[:, 0], state, memory, uniform)
    assert torch.equal(replaced.weights, uniform)
    assert not torch.allclose(replaced.log_probs, own.log_probs)
    with pytest.raises(ValueError, match="no attention"):
        build("none").step(tgt_in[:, 0], state, memory, uniform)


# ---------------------------------------------------------------- Bahdanau: attend, then step

def test_bahdanau_attends_with_the_previous_state_and_projects_keys_once():
    decoder = build("bahdanau")
    keys, mask, encoder_final, tgt_in = make_inputs()
    key_calls = call_counter(decoder.attention.key_layer)
    memory = decoder.prepare_memory(keys, mask)
    assert len(key_calls) == 1 and memory.projected_keys.shape == (B, S, H)
    state = decoder.init_state(encoder_final)
    out = decoder(tgt_in, state, memory)
    assert len(key_calls) == 1  # T steps, no more projections of the keys
    assert_close(out.weights[:, 0], decoder.attention(encoder_final, keys, mask).weights)  # s_0, before the GRU
    step = decoder.step(tgt_in[:, 0], state, memory)
    assert_close(out.weights[:, 1], decoder.attention(step.state.hidden, keys, mask).weights)


# ---------------------------------------------------------------- Luong: step, then attend

@pytest.mark.parametrize("score", LUONG_SCORES)
def test_luong_step_attends_with_the_current_state_through_the_attentional_state(score):
    decoder = build(score)
    memory, state, tgt_in = start(decoder)
    step = decoder.step(tgt_in[:, 0], state, memory)
    _, hidden = decoder.gru(decoder.embedding(tgt_in[:, :1]), state.hidden.unsqueeze(0))
    hidden = hidden[0]
    assert_close(step.state.hidden, hidden)
    context, weights = decoder.attention(hidden, memory.keys, memory.mask)
    assert_close(step.weights, weights)
    attentional = torch.tanh(decoder.combine(torch.cat([context, hidden], -1)))  # tanh(W_c [c; h])
    assert_close(step.log_probs, F.log_softmax(decoder.out(attentional), -1))


@pytest.mark.parametrize("score, key_size", FAST_PATH_CASES)
def test_luong_fast_path_equals_the_step_loop(score, key_size):
    decoder = build(score, key_size)
    memory, state, tgt_in = start(decoder, key_size)
    gru_calls = call_counter(decoder.gru)
    fast = FastDecoder(decoder)(tgt_in, state, memory)
    assert len(gru_calls) == 1  # one GRU call over the whole target
    loop = decoder.decode_steps(tgt_in, state, memory)
    assert len(gru_calls) == 1 + T
    assert_close(fast.log_probs, loop.log_probs)
    assert_close(fast.weights, loop.weights)
    assert_close(fast.state.hidden, loop.state.hidden)


@pytest.mark.parametrize("score, key_size", FAST_PATH_CASES)
def test_luong_fast_path_gradients_equal_the_step_loops(score, key_size):
    decoder = build(score, key_size)  # eval mode: no dropout, so both paths compute the same function
    keys, mask, encoder_final, tgt_in = make_inputs(key_size)
    keys.requires_grad_(True)
    gold = torch.roll(tgt_in, -1, dims=1)

    def gradients(run):
        decoder.zero_grad()
        keys.grad = None
        memory, state = decoder.prepare_memory(keys, mask), decoder.init_state(encoder_final)
        F.nll_loss(run(tgt_in, state, memory).log_probs.reshape(-1, V), gold.reshape(-1)).backward()
        return {"keys": keys.grad.clone(), **{name: p.grad.clone() for name, p in decoder.named_parameters()}}

    fast, loop = gradients(FastDecoder(decoder)), gradients(decoder.decode_steps)
    assert fast.keys() == loop.keys() and len(fast) > 3
    for name in fast:
        assert fast[name].abs().sum() > 0, name
        assert_close(fast[name], loop[name], atol=1e-5, rtol=1e-4, msg=name)


@pytest.mark.parametrize("ratio", [0.3, 0.7])
@pytest.mark.parametrize("kind", ["bahdanau", "general", "location"])
def test_teacher_forcing_feeds_the_gold_word_exactly_when_the_coin_falls_below_the_ratio(kind, ratio):
    """Replays the loop by hand: coin < ratio -> gold word, else the previous step's argmax."""
    decoder = build(kind)
    memory, state, tgt_in = start(decoder)
    tgt_in = torch.cat([tgt_in, tgt_in.flip(1)], dim=1)  # 2T steps: 2T - 1 coins
    steps = tgt_in.shape[1]
    torch.manual_seed(11)
    coins = (torch.rand(steps - 1) < ratio).tolist()  # the documented draw: one torch.rand of T - 1 coins up front
    assert any(coins) and not all(coins)  # this seed gives both outcomes
    torch.manual_seed(11)
    out = decoder(tgt_in, state, memory, teacher_forcing_ratio=ratio)
    tokens, expected, gold_differs = tgt_in[:, 0], [], False
    for t in range(steps):
        if t > 0:
            argmax = expected[-1].argmax(-1)
            gold_differs |= bool((argmax != tgt_in[:, t]).any())
            tokens = tgt_in[:, t] if coins[t - 1] else argmax
        step = decoder.step(tokens, state, memory)
        state = step.state
        expected.append(step.log_probs)
    assert gold_differs  # feeding gold or argmax makes a difference here, so a swapped coin would show
    assert_close(out.log_probs, torch.stack(expected, dim=1))


def test_luong_takes_the_step_loop_with_input_feeding_or_sampling():
    for kind, ratio in [("general+feeding", 1.0), ("general", 0.5)]:
        decoder = build(kind)
        memory, state, tgt_in = start(decoder)
        gru_calls = call_counter(decoder.gru)
        FastDecoder(decoder)(tgt_in, state, memory, teacher_forcing_ratio=ratio)
        assert len(gru_calls) == T


def test_input_feeding_carries_the_attentional_state():
    decoder = build("general+feeding")
    memory, state, tgt_in = start(decoder)
    assert torch.equal(state.input_feed, torch.zeros(B, H))
    step = decoder.step(tgt_in[:, 0], state, memory)
    context, _ = decoder.attention(step.state.hidden, memory.keys, memory.mask)
    assert_close(step.state.input_feed, torch.tanh(decoder.combine(torch.cat([context, step.state.hidden], -1))))
    fed = decoder.step(tgt_in[:, 1], step.state, memory)
    unfed = decoder.step(tgt_in[:, 1], step.state._replace(input_feed=torch.zeros(B, H)), memory)
    assert (fed.log_probs - unfed.log_probs).abs().max() > 1e-4
    assert build("general").init_state(torch.zeros(B, H)).input_feed is None


# ---------------------------------------------------------------- errors

def test_bad_inputs_raise_errors_that_name_the_fix():
    decoder = build("bahdanau")
    keys, mask, encoder_final, tgt_in = make_inputs()
    with pytest.raises(ValueError, match="key_size = encoder.key_size"):
        decoder.prepare_memory(torch.cat([keys, keys], -1), mask)
    with pytest.raises(ValueError, match="bool"):
        decoder.prepare_memory(keys, mask.long())
    with pytest.raises(ValueError, match="decoder_hidden_size"):
        decoder.init_state(torch.zeros(B, 2 * H))
    memory, state = decoder.prepare_memory(keys, mask), decoder.init_state(encoder_final)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        decoder(tgt_in, state, memory, teacher_forcing_ratio=1.5)
    with pytest.raises(ValueError, match="LongTensor"):
        build("general")(tgt_in.float(), state, memory)
    with pytest.raises(ValueError, match="general"):
        LuongDecoder(E, H, 2 * H, V, score="dot")
