"""Decoding: greedy and beam search agree, stop at EOS, respect a source-derived cap, and translate() is robust."""
import pytest
import torch

from course_utils import search
from course_utils.seq2seq import ModelConfig, Seq2Seq
from course_utils.vocab import EOS_ID, MAX_LENGTH, PAD_ID, SOS_ID

ATTENTIONS = ["bahdanau", "general", "concat", "none"]


def small_model(data, attention="bahdanau", seed=0) -> Seq2Seq:
    torch.manual_seed(seed)
    config = ModelConfig(len(data.src_vocab), len(data.tgt_vocab), attention=attention, embedding_size=16,
                         hidden_size=24)
    return Seq2Seq(config).eval()


def batch_of(data, sentences):
    ids = [torch.tensor(data.src_vocab.encode(sentence)) for sentence in sentences]
    src = torch.nn.utils.rnn.pad_sequence(ids, batch_first=True, padding_value=PAD_ID)  # (B, S)
    return src, torch.tensor([len(x) for x in ids])


def force_output_bias(model, token_id: int) -> None:
    """Make `token_id` the argmax of every step (the output layer's bias dominates)."""
    with torch.no_grad():
        model.decoder.out.bias.fill_(0.0)
        model.decoder.out.bias[token_id] = 100.0


@pytest.mark.parametrize("attention", ATTENTIONS)
def test_greedy_equals_beam_width_one(tiny_course_data, attention):
    model = small_model(tiny_course_data, attention)
    for pair in tiny_course_data.splits.train[:6]:
        src = torch.tensor(tiny_course_data.src_vocab.encode(pair.source))
        greedy = search.greedy_decode(model, src.unsqueeze(0), torch.tensor([len(src)]))
        (beam,) = search.beam_search(model, src, beam_width=1)
        assert beam.tokens == greedy.tokens[0, :int(greedy.lengths[0])].tolist()
        assert beam.log_prob == pytest.approx(float(greedy.log_prob[0]), abs=1e-4)
        if attention == "none":
            assert beam.attention is None and greedy.attention is None
        else:
            torch.testing.assert_close(beam.attention, greedy.attention[0, :len(beam.tokens)])


@pytest.mark.parametrize("attention", ["bahdanau", "none"])
def test_beam_returns_width_hypotheses_sorted_with_attention(tiny_course_data, attention):
    model = small_model(tiny_course_data, attention, seed=1)
    src = torch.tensor(tiny_course_data.src_vocab.encode("je suis fatigue ."))
    hypotheses = search.beam_search(model, src, beam_width=4, length_penalty=1.0)
    assert len(hypotheses) == 4
    scores = [h.score for h in hypotheses]
    assert scores == sorted(scores, reverse=True)
    for h in hypotheses:
        assert h.score == pytest.approx(h.log_prob / len(h.tokens))
        assert h.finished == (h.tokens[-1] == EOS_ID)
        assert PAD_ID not in h.tokens and SOS_ID not in h.tokens
        if attention == "none":
            assert h.attention is None
        else:
            assert h.attention.shape == (len(h.tokens), len(src))
            torch.testing.assert_close(h.attention.sum(dim=1), torch.ones(len(h.tokens)))


def test_beam_with_larger_width_never_finds_a_worse_best_log_prob_than_greedy_when_unnormalised(tiny_course_data):
    model = small_model(tiny_course_data, "bahdanau", seed=2)
    with torch.no_grad():
        model.decoder.out.bias[EOS_ID] += 0.2  # the untrained model then ends greedy outputs after 2 to 6 words
    for pair in tiny_course_data.splits.train[:5]:
        src = torch.tensor(tiny_course_data.src_vocab.encode(pair.source))
        (greedy,) = search.beam_search(model, src, beam_width=1, length_penalty=0.0)
        best = search.beam_search(model, src, beam_width=5, length_penalty=0.0)[0]
        assert greedy.finished and len(greedy.tokens) > 1  # the comparison below is between finished outputs
        assert best.finished and best.log_prob >= greedy.log_prob - 1e-5


def test_greedy_stops_at_eos_and_pads_after_it(tiny_course_data):
    model = small_model(tiny_course_data)
    force_output_bias(model, EOS_ID)
    src, lengths = batch_of(tiny_course_data, ["je suis fatigue .", "il est grand ."])
    output = search.greedy_decode(model, src, lengths)
    assert output.tokens.tolist() == [[EOS_ID], [EOS_ID]]
    assert output.lengths.tolist() == [1, 1]
    assert output.attention.shape == (2, 1, src.shape[1])


def test_length_cap_follows_each_source_length_not_max_length(tiny_course_data):
    model = small_model(tiny_course_data)
    word = tiny_course_data.tgt_vocab.word2index["tired"]
    force_output_bias(model, word)  # never produces EOS: only the cap stops it
    long_sentence = " ".join(["je suis fatigue"] * 8) + " ."  # 25 words, far over MAX_LENGTH
    src, lengths = batch_of(tiny_course_data, ["il est grand .", long_sentence])
    output = search.greedy_decode(model, src, lengths)
    caps = search.default_max_steps(lengths)
    assert output.lengths.tolist() == caps.tolist()
    assert caps[1] > caps[0] > 0 and caps[1] > MAX_LENGTH
    assert (output.tokens[0, int(caps[0]):] == PAD_ID).all()  # the short row stopped, then padded
    assert search.greedy_decode(model, src, lengths, max_steps=3).tokens.shape[1] == 3


def test_pad_and_sos_are_never_produced(tiny_course_data):
    model = small_model(tiny_course_data)
    force_output_bias(model, PAD_ID)
    src, lengths = batch_of(tiny_course_data, ["je suis fatigue ."])
    output = search.greedy_decode(model, src, lengths, max_steps=6)
    assert PAD_ID not in output.tokens[0, :int(output.lengths[0])].tolist()
    assert SOS_ID not in output.tokens[0].tolist()


def test_force_decode_reproduces_greedy_steps(tiny_course_data):
    model = small_model(tiny_course_data, "concat")
    src = torch.tensor(tiny_course_data.src_vocab.encode("je suis fatigue ."))
    greedy = search.greedy_decode(model, src.unsqueeze(0), torch.tensor([len(src)]))
    output = greedy.tokens[0, :int(greedy.lengths[0])]
    forced = search.force_decode(model, src, output)
    assert forced.log_probs.shape == (len(output), len(tiny_course_data.tgt_vocab))
    allowed = forced.log_probs.index_fill(1, torch.tensor([PAD_ID, SOS_ID]), float("-inf"))
    assert allowed.argmax(dim=1).tolist() == output.tolist()
    torch.testing.assert_close(forced.attention, greedy.attention[0, :len(output)], atol=1e-5, rtol=1e-4)


# ---------------------------------------------------------------------------------------------- issue 11
@pytest.mark.parametrize("attention", ["bahdanau", "general", "none"])
def test_greedy_scores_a_sentence_the_same_alone_and_in_a_batch(tiny_course_data, attention):
    """Rows that ended (EOS or their cap) add nothing more to their log-probability while others go on."""
    model = small_model(tiny_course_data, attention, seed=3)  # untrained: each row runs to its own length cap
    sentences = ["va !", "je suis fatigue .", "il est grand .", " ".join(["je suis fatigue"] * 4) + " ."]
    src, lengths = batch_of(tiny_course_data, sentences)
    batched = search.greedy_decode(model, src, lengths)
    assert len(set(batched.lengths.tolist())) > 1  # the rows really end at different steps
    for row, sentence in enumerate(sentences):
        alone_src, alone_lengths = batch_of(tiny_course_data, [sentence])
        alone = search.greedy_decode(model, alone_src, alone_lengths)
        length = int(alone.lengths[0])
        assert batched.tokens[row, :length].tolist() == alone.tokens[0, :length].tolist()
        assert float(batched.log_prob[row]) == pytest.approx(float(alone.log_prob[0]), abs=1e-4)
        forced = search.force_decode(model, alone_src[0], alone.tokens[0, :length])  # log P of exactly these tokens
        expected = forced.log_probs.gather(1, alone.tokens[0, :length].unsqueeze(1)).sum()
        assert float(alone.log_prob[0]) == pytest.approx(float(expected), abs=1e-4)


# ---------------------------------------------------------------------------------------------- sampling
@pytest.mark.parametrize("attention", ["bahdanau", "none"])
def test_sampling_with_top_k_one_or_a_tiny_temperature_is_greedy(tiny_course_data, attention):
    model = small_model(tiny_course_data, attention, seed=5)
    src, lengths = batch_of(tiny_course_data, ["je suis fatigue .", "il est grand .", "va !"])
    greedy = search.greedy_decode(model, src, lengths)
    for settings in (dict(top_k=1, temperature=2.0), dict(temperature=1e-4), dict(temperature=0.0)):
        sampled = search.sample_decode(model, src, lengths, generator=torch.Generator().manual_seed(0), **settings)
        assert sampled.tokens.equal(greedy.tokens) and sampled.lengths.equal(greedy.lengths), settings
        torch.testing.assert_close(sampled.log_prob, greedy.log_prob)
        if attention == "none":
            assert sampled.attention is None
        else:
            torch.testing.assert_close(sampled.attention, greedy.attention)


def test_sampling_is_reproducible_with_a_seed_and_varies_without_one(tiny_course_data):
    model = small_model(tiny_course_data, seed=6)
    src, lengths = batch_of(tiny_course_data, ["je suis fatigue ."] * 8)
    draw = lambda seed, **kw: search.sample_decode(model, src, lengths, generator=torch.Generator().manual_seed(seed),
                                                   **kw)
    first, again = draw(3), draw(3)
    assert first.tokens.equal(again.tokens) and first.log_prob.equal(again.log_prob)
    assert len({tuple(row) for row in first.tokens.tolist()}) > 1  # an untrained model: the 8 rows differ
    assert not draw(4).tokens.equal(first.tokens)
    for row in range(8):  # log_prob is the model's own log-probability of the drawn tokens (forced decoding)
        output = first.tokens[row, :int(first.lengths[row])]
        forced = search.force_decode(model, src[row, :int(lengths[row])], output)
        assert float(first.log_prob[row]) == pytest.approx(float(forced.log_probs.gather(1, output[:, None]).sum()),
                                                           abs=1e-4)


def test_sampling_with_top_k_draws_only_among_the_k_best_and_never_pad_or_sos(tiny_course_data):
    model = small_model(tiny_course_data, seed=7)
    src, lengths = batch_of(tiny_course_data, ["je suis fatigue ."] * 16)
    sampled = search.sample_decode(model, src, lengths, temperature=5.0, top_k=3, max_steps=1,
                                   generator=torch.Generator().manual_seed(1))  # one step: the first token
    memory, state = model.encode(src[:1], lengths[:1])
    with torch.no_grad():
        first_step = model.decoder.step(torch.tensor([SOS_ID]), state, memory).log_probs[0]  # (V,)
    allowed = set(search.forbid_special_tokens(first_step).topk(3).indices.tolist())
    assert set(sampled.tokens[:, 0].tolist()) <= allowed and len(set(sampled.tokens[:, 0].tolist())) > 1
    assert not {PAD_ID, SOS_ID} & set(sampled.tokens.flatten().tolist())
    with pytest.raises(ValueError, match="temperature"):
        search.sample_decode(model, src, lengths, temperature=-1.0)
    with pytest.raises(ValueError, match="top_k"):
        search.sample_decode(model, src, lengths, top_k=0)


def test_decoding_asks_the_decoder_whether_the_source_fits(tiny_course_data, monkeypatch):
    model = small_model(tiny_course_data, "bahdanau")
    asked = []
    monkeypatch.setattr(model.decoder, "check_source_length", asked.append)  # the decoder owns the rule
    src, lengths = batch_of(tiny_course_data, ["je suis fatigue ."])
    search.greedy_decode(model, src, lengths, max_steps=2)
    search.beam_search(model, src[0], beam_width=2, max_steps=2)
    search.force_decode(model, src[0], torch.tensor([EOS_ID]))
    assert asked == [src.shape[1]] * 3


def test_location_model_refuses_a_long_source_before_decoding(tiny_course_data):
    torch.manual_seed(0)
    config = ModelConfig(len(tiny_course_data.src_vocab), len(tiny_course_data.tgt_vocab), attention="location",
                         hidden_size=8, location_slots=3)
    model = Seq2Seq(config).eval()
    src, lengths = batch_of(tiny_course_data, ["je suis fatigue ."])  # 5 tokens with EOS, 3 slots
    for run in (lambda: search.greedy_decode(model, src, lengths), lambda: search.beam_search(model, src[0]),
                lambda: search.force_decode(model, src[0], torch.tensor([EOS_ID]))):
        with pytest.raises(ValueError, match="location attention.*max_length=3.*S=5"):
            run()


def test_beam_step_keeps_the_best_whole_hypotheses_and_names_parent_and_token():
    alive = torch.tensor([-2.0, -0.1])  # the second prefix is far more probable
    step = torch.log(torch.tensor([[0.9, 0.1, 0.0], [0.2, 0.3, 0.5]]))  # (N=2, V=3)
    values, parents, tokens = search.beam_step(alive, step, 2)
    assert list(zip(parents.tolist(), tokens.tolist())) == [(1, 2), (1, 1)]  # not (0, 0): whole hypotheses rank
    torch.testing.assert_close(values, alive[1] + step[1, [2, 1]])
    assert len(search.beam_step(alive, step, 10)[0]) == 6  # never more than the N x V candidates
