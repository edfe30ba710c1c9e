"""Decoding: greedy and beam search agree, stop at EOS, respect a source-derived cap, and translate() is robust."""
import pytest
import torch

from course_utils import decode
from course_utils.data import MAX_LENGTH
from course_utils.seq2seq import ModelConfig, Seq2Seq
from course_utils.vocab import EOS_ID, EOS_TOKEN, PAD_ID, SOS_ID, UNK_ID

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
        greedy = decode.greedy_decode(model, src.unsqueeze(0), torch.tensor([len(src)]))
        (beam,) = decode.beam_search(model, src, beam_width=1)
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
    hypotheses = decode.beam_search(model, src, beam_width=4, length_penalty=1.0)
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
        (greedy,) = decode.beam_search(model, src, beam_width=1, length_penalty=0.0)
        best = decode.beam_search(model, src, beam_width=5, length_penalty=0.0)[0]
        assert greedy.finished and len(greedy.tokens) > 1  # the comparison below is between finished outputs
        assert best.finished and best.log_prob >= greedy.log_prob - 1e-5


def test_greedy_stops_at_eos_and_pads_after_it(tiny_course_data):
    model = small_model(tiny_course_data)
    force_output_bias(model, EOS_ID)
    src, lengths = batch_of(tiny_course_data, ["je suis fatigue .", "il est grand ."])
    output = decode.greedy_decode(model, src, lengths)
    assert output.tokens.tolist() == [[EOS_ID], [EOS_ID]]
    assert output.lengths.tolist() == [1, 1]
    assert output.attention.shape == (2, 1, src.shape[1])


def test_length_cap_follows_each_source_length_not_max_length(tiny_course_data):
    model = small_model(tiny_course_data)
    word = tiny_course_data.tgt_vocab.word2index["tired"]
    force_output_bias(model, word)  # never produces EOS: only the cap stops it
    long_sentence = " ".join(["je suis fatigue"] * 8) + " ."  # 25 words, far over MAX_LENGTH
    src, lengths = batch_of(tiny_course_data, ["il est grand .", long_sentence])
    output = decode.greedy_decode(model, src, lengths)
    caps = decode.default_max_lengths(lengths)
    assert output.lengths.tolist() == caps.tolist()
    assert caps[1] > caps[0] > 0 and caps[1] > MAX_LENGTH
    assert (output.tokens[0, int(caps[0]):] == PAD_ID).all()  # the short row stopped, then padded
    assert decode.greedy_decode(model, src, lengths, max_length=3).tokens.shape[1] == 3


def test_pad_and_sos_are_never_produced(tiny_course_data):
    model = small_model(tiny_course_data)
    force_output_bias(model, PAD_ID)
    src, lengths = batch_of(tiny_course_data, ["je suis fatigue ."])
    output = decode.greedy_decode(model, src, lengths, max_length=6)
    assert PAD_ID not in output.tokens[0, :int(output.lengths[0])].tolist()
    assert SOS_ID not in output.tokens[0].tolist()


def test_translate_normalises_reports_unknown_words_and_aligns_attention(tiny_course_data):
    model = small_model(tiny_course_data)
    result = decode.translate(model, tiny_course_data.src_vocab, tiny_course_data.tgt_vocab,
                              "  Je SUIS fatigué, zorglub!  ")
    assert result.source_tokens == ["je", "suis", "fatigue", "zorglub", "!", EOS_TOKEN]  # as the corpus was cleaned
    assert "zorglub" in result.unknown_words and "je" not in result.unknown_words
    assert result.attention.shape == (len(result.output_tokens), len(result.source_tokens))
    torch.testing.assert_close(result.attention.sum(dim=1), torch.ones(len(result.output_tokens)))
    assert result.text == " ".join(t for t in result.output_tokens if t != EOS_TOKEN)


@pytest.mark.parametrize("sentence, fragment", [("", "empty"), ("   ", "empty"), ("zorglub blorp", "unknown")])
def test_translate_rejects_empty_and_only_unknown_input_clearly(tiny_course_data, sentence, fragment):
    model = small_model(tiny_course_data)
    with pytest.raises(ValueError, match=fragment):
        decode.translate(model, tiny_course_data.src_vocab, tiny_course_data.tgt_vocab, sentence)


def test_translate_handles_sentences_longer_than_anything_in_training(tiny_course_data):
    model = small_model(tiny_course_data)
    sentence = " ".join(["je suis fatigue et"] * 30) + " ."  # 121 words
    result = decode.translate(model, tiny_course_data.src_vocab, tiny_course_data.tgt_vocab, sentence, beam_width=2)
    assert len(result.source_tokens) == 122
    assert result.attention.shape[1] == 122


def test_location_attention_model_says_why_it_cannot_read_long_sentences(tiny_course_data):
    torch.manual_seed(0)
    config = ModelConfig(len(tiny_course_data.src_vocab), len(tiny_course_data.tgt_vocab), attention="location",
                         hidden_size=16, embedding_size=16)
    model = Seq2Seq(config).eval()
    with pytest.raises(ValueError, match="location attention"):
        decode.translate(model, tiny_course_data.src_vocab, tiny_course_data.tgt_vocab, "je suis " * 10)


def test_translate_batch_keeps_input_order_and_matches_one_by_one(tiny_course_data):
    model = small_model(tiny_course_data, "general")
    sentences = ["il est grand .", "je suis fatigue .", "nous sommes prets .", "elle cuisine ."]
    batched = decode.translate_batch(model, tiny_course_data.src_vocab, tiny_course_data.tgt_vocab, sentences,
                                     batch_size=3)
    for sentence, result in zip(sentences, batched):
        alone = decode.translate(model, tiny_course_data.src_vocab, tiny_course_data.tgt_vocab, sentence)
        assert result.output_tokens == alone.output_tokens
        assert result.source_tokens == alone.source_tokens
        torch.testing.assert_close(result.attention, alone.attention, atol=1e-5, rtol=1e-4)


def test_force_decode_reproduces_greedy_steps(tiny_course_data):
    model = small_model(tiny_course_data, "concat")
    src = torch.tensor(tiny_course_data.src_vocab.encode("je suis fatigue ."))
    greedy = decode.greedy_decode(model, src.unsqueeze(0), torch.tensor([len(src)]))
    output = greedy.tokens[0, :int(greedy.lengths[0])]
    forced = decode.force_decode(model, src, output)
    assert forced.log_probs.shape == (len(output), len(tiny_course_data.tgt_vocab))
    allowed = forced.log_probs.index_fill(1, torch.tensor([PAD_ID, SOS_ID]), float("-inf"))
    assert allowed.argmax(dim=1).tolist() == output.tolist()
    torch.testing.assert_close(forced.attention, greedy.attention[0, :len(output)], atol=1e-5, rtol=1e-4)


def test_translate_forced_of_the_greedy_output_equals_the_greedy_translation(tiny_course_data):
    data = tiny_course_data
    model = small_model(data, "bahdanau")
    greedy = decode.translate(model, data.src_vocab, data.tgt_vocab, "Je suis fatigué.")
    text = " ".join(greedy.output_tokens[:-1] if greedy.output_tokens[-1] == EOS_TOKEN else greedy.output_tokens)
    forced = decode.translate_forced(model, data.src_vocab, data.tgt_vocab, "Je suis fatigué.", text)
    assert forced.source_tokens == greedy.source_tokens
    assert forced.output_tokens == text.split() + [EOS_TOKEN]
    assert forced.attention.shape == (len(forced.output_tokens), len(forced.source_tokens))  # (T, S)
    rows = len(greedy.output_tokens)
    torch.testing.assert_close(forced.attention[:rows], greedy.attention[:rows], atol=1e-5, rtol=1e-4)
    assert forced.score < 0.0  # log P(output | source)
    with pytest.raises(ValueError, match="empty after normalisation"):
        decode.translate_forced(model, data.src_vocab, data.tgt_vocab, "je suis fatigue .", "123 , ")


def test_unknown_words_are_fed_as_unk(tiny_course_data):
    words, ids, unknown = decode.prepare_source(tiny_course_data.src_vocab, "je suis zorglub .")
    assert words == ["je", "suis", "zorglub", "."]
    assert ids[2] == UNK_ID and ids[-1] == EOS_ID and unknown == ["zorglub"]


def test_attention_table_labels_rows_and_columns(tiny_course_data):
    model = small_model(tiny_course_data)
    result = decode.translate(model, tiny_course_data.src_vocab, tiny_course_data.tgt_vocab, "il est grand .")
    lines = decode.attention_table(result).splitlines()
    assert lines[0].split() == result.source_tokens
    assert [line.split()[0] for line in lines[1:]] == result.output_tokens
    none_model = small_model(tiny_course_data, "none")
    no_attention = decode.translate(none_model, tiny_course_data.src_vocab, tiny_course_data.tgt_vocab,
                                    "il est grand .")
    assert "no attention" in decode.attention_table(no_attention)


# ---------------------------------------------------------------------------------------------- issue 11
@pytest.mark.parametrize("attention", ["bahdanau", "general", "none"])
def test_greedy_scores_a_sentence_the_same_alone_and_in_a_batch(tiny_course_data, attention):
    """Rows that ended (EOS or their cap) add nothing more to their log-probability while others go on."""
    model = small_model(tiny_course_data, attention, seed=3)  # untrained: each row runs to its own length cap
    sentences = ["va !", "je suis fatigue .", "il est grand .", " ".join(["je suis fatigue"] * 4) + " ."]
    src, lengths = batch_of(tiny_course_data, sentences)
    batched = decode.greedy_decode(model, src, lengths)
    assert len(set(batched.lengths.tolist())) > 1  # the rows really end at different steps
    for row, sentence in enumerate(sentences):
        alone_src, alone_lengths = batch_of(tiny_course_data, [sentence])
        alone = decode.greedy_decode(model, alone_src, alone_lengths)
        length = int(alone.lengths[0])
        assert batched.tokens[row, :length].tolist() == alone.tokens[0, :length].tolist()
        assert float(batched.log_prob[row]) == pytest.approx(float(alone.log_prob[0]), abs=1e-4)
        forced = decode.force_decode(model, alone_src[0], alone.tokens[0, :length])  # log P of exactly these tokens
        expected = forced.log_probs.gather(1, alone.tokens[0, :length].unsqueeze(1)).sum()
        assert float(alone.log_prob[0]) == pytest.approx(float(expected), abs=1e-4)


def test_a_huge_token_is_echoed_once_and_clipped(tiny_course_data):
    token = "z" * 10_000
    with pytest.raises(ValueError, match="unknown") as error:
        decode.prepare_source(tiny_course_data.src_vocab, token)
    message = str(error.value)
    assert message.count("z" * 50) == 1 and len(message) < 400 and "10,000 characters" in message
    with pytest.raises(ValueError, match="empty") as error:
        decode.prepare_source(tiny_course_data.src_vocab, "*" * 10_000)
    assert len(str(error.value)) < 400
    words, _, unknown = decode.prepare_source(tiny_course_data.src_vocab, f"je suis {token} .")
    (warning,) = decode.source_warnings(words, unknown)
    assert warning.count("z" * 50) == 1 and len(warning) < 200


def test_only_punctuation_gets_a_warning_and_words_do_not(tiny_course_data):
    words, _, unknown = decode.prepare_source(tiny_course_data.src_vocab, "?!...")
    assert words == ["?", "!", ".", ".", "."]
    assert any("only punctuation" in warning for warning in decode.source_warnings(words, unknown))
    words, _, unknown = decode.prepare_source(tiny_course_data.src_vocab, "je suis fatigue !")
    assert decode.source_warnings(words, unknown) == []
