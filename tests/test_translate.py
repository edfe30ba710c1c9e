"""Text-level translation: translate() is robust, batches match one-by-one, and unknown-word replacement copies the
most attended source word."""
import pytest
import torch

from course_utils import translate
from course_utils.cli import batch_translate
from course_utils.seq2seq import ModelConfig, Seq2Seq
from course_utils.vocab import EOS_ID, EOS_TOKEN, UNK_ID, UNK_TOKEN


def small_model(data, attention="bahdanau", seed=0) -> Seq2Seq:
    torch.manual_seed(seed)
    config = ModelConfig(len(data.src_vocab), len(data.tgt_vocab), attention=attention, embedding_size=16,
                         hidden_size=24)
    return Seq2Seq(config).eval()


def force_output_bias(model, token_id: int) -> None:
    """Make `token_id` the argmax of every step (the output layer's bias dominates)."""
    with torch.no_grad():
        model.decoder.out.bias.fill_(0.0)
        model.decoder.out.bias[token_id] = 100.0


def test_translate_normalises_reports_unknown_words_and_aligns_attention(tiny_course_data):
    model = small_model(tiny_course_data)
    result = translate.translate(model, tiny_course_data.src_vocab, tiny_course_data.tgt_vocab,
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
        translate.translate(model, tiny_course_data.src_vocab, tiny_course_data.tgt_vocab, sentence)


def test_translate_handles_sentences_longer_than_anything_in_training(tiny_course_data):
    model = small_model(tiny_course_data)
    sentence = " ".join(["je suis fatigue et"] * 30) + " ."  # 121 words
    result = translate.translate(model, tiny_course_data.src_vocab, tiny_course_data.tgt_vocab, sentence, beam_width=2)
    assert len(result.source_tokens) == 122
    assert result.attention.shape[1] == 122


def test_location_attention_model_says_why_it_cannot_read_long_sentences(tiny_course_data):
    torch.manual_seed(0)
    config = ModelConfig(len(tiny_course_data.src_vocab), len(tiny_course_data.tgt_vocab), attention="location",
                         hidden_size=16, embedding_size=16)
    model = Seq2Seq(config).eval()
    with pytest.raises(ValueError, match="location attention"):
        translate.translate(model, tiny_course_data.src_vocab, tiny_course_data.tgt_vocab, "je suis " * 10)


def test_translate_batch_keeps_input_order_and_matches_one_by_one(tiny_course_data):
    model = small_model(tiny_course_data, "general")
    sentences = ["il est grand .", "je suis fatigue .", "nous sommes prets .", "elle cuisine ."]
    batched = translate.translate_batch(model, tiny_course_data.src_vocab, tiny_course_data.tgt_vocab, sentences,
                                     batch_size=3)
    for sentence, result in zip(sentences, batched):
        alone = translate.translate(model, tiny_course_data.src_vocab, tiny_course_data.tgt_vocab, sentence)
        assert result.output_tokens == alone.output_tokens
        assert result.source_tokens == alone.source_tokens
        torch.testing.assert_close(result.attention, alone.attention, atol=1e-5, rtol=1e-4)


def test_translate_forced_of_the_greedy_output_equals_the_greedy_translation(tiny_course_data):
    data = tiny_course_data
    model = small_model(data, "bahdanau")
    greedy = translate.translate(model, data.src_vocab, data.tgt_vocab, "Je suis fatigué.")
    text = " ".join(greedy.output_tokens[:-1] if greedy.output_tokens[-1] == EOS_TOKEN else greedy.output_tokens)
    forced = translate.translate_forced(model, data.src_vocab, data.tgt_vocab, "Je suis fatigué.", text)
    assert forced.source_tokens == greedy.source_tokens
    assert forced.output_tokens == text.split() + [EOS_TOKEN]
    assert forced.attention.shape == (len(forced.output_tokens), len(forced.source_tokens))  # (T, S)
    rows = len(greedy.output_tokens)
    torch.testing.assert_close(forced.attention[:rows], greedy.attention[:rows], atol=1e-5, rtol=1e-4)
    assert forced.score < 0.0  # log P(output | source)
    with pytest.raises(ValueError, match="empty after normalisation"):
        translate.translate_forced(model, data.src_vocab, data.tgt_vocab, "je suis fatigue .", "123 , ")


def test_unknown_words_are_fed_as_unk(tiny_course_data):
    words, ids, unknown = translate.prepare_source(tiny_course_data.src_vocab, "je suis zorglub .")
    assert words == ["je", "suis", "zorglub", "."]
    assert ids[2] == UNK_ID and ids[-1] == EOS_ID and unknown == ["zorglub"]


def test_attention_table_labels_rows_and_columns(tiny_course_data):
    model = small_model(tiny_course_data)
    result = translate.translate(model, tiny_course_data.src_vocab, tiny_course_data.tgt_vocab, "il est grand .")
    lines = batch_translate.attention_table(result).splitlines()
    assert lines[0].split() == result.source_tokens
    assert [line.split()[0] for line in lines[1:]] == result.output_tokens
    none_model = small_model(tiny_course_data, "none")
    no_attention = translate.translate(none_model, tiny_course_data.src_vocab, tiny_course_data.tgt_vocab,
                                    "il est grand .")
    assert "no attention" in batch_translate.attention_table(no_attention)


def test_a_huge_token_is_echoed_once_and_clipped(tiny_course_data):
    token = "z" * 10_000
    with pytest.raises(ValueError, match="unknown") as error:
        translate.prepare_source(tiny_course_data.src_vocab, token)
    message = str(error.value)
    assert message.count("z" * 50) == 1 and len(message) < 400 and "10,000 characters" in message
    with pytest.raises(ValueError, match="empty") as error:
        translate.prepare_source(tiny_course_data.src_vocab, "*" * 10_000)
    assert len(str(error.value)) < 400
    words, _, unknown = translate.prepare_source(tiny_course_data.src_vocab, f"je suis {token} .")
    (warning,) = batch_translate.source_warnings(words, unknown)
    assert warning.count("z" * 50) == 1 and len(warning) < 200


def test_only_punctuation_gets_a_warning_and_words_do_not(tiny_course_data):
    words, _, unknown = translate.prepare_source(tiny_course_data.src_vocab, "?!...")
    assert words == ["?", "!", ".", ".", "."]
    assert any("only punctuation" in warning for warning in batch_translate.source_warnings(words, unknown))
    words, _, unknown = translate.prepare_source(tiny_course_data.src_vocab, "je suis fatigue !")
    assert batch_translate.source_warnings(words, unknown) == []


# ---------------------------------------------------------------------------------------------- unknown words
def hand_translation(attention, output_tokens=("i", "see", UNK_TOKEN, ".", EOS_TOKEN)):
    source = ["je", "vois", "zorglub", ".", EOS_TOKEN]
    return translate.Translation(source, list(output_tokens), attention, -1.0, ["zorglub"])


def test_replace_unknown_copies_the_most_attended_source_word_never_eos():
    attention = torch.full((5, 5), 0.05)  # (T, S)
    attention[2, 2] = 0.8  # the <unk> step looks at "zorglub"
    translation = translate.replace_unknown_words(hand_translation(attention))
    assert translation.output_tokens == ["i", "see", "zorglub", ".", EOS_TOKEN]
    assert translation.text == "i see zorglub ." and translation.replacements == ((2, 2),)
    assert translation.attention is attention and translation.score == -1.0  # nothing else changes
    attention[2] = torch.tensor([0.1, 0.3, 0.05, 0.05, 0.5])  # most weight on the source <eos>: not a word
    assert translate.replace_unknown_words(hand_translation(attention)).output_tokens[2] == "vois"
    attention[2] = torch.tensor([0.1, 0.2, 0.05, 0.6, 0.05])  # most weight on "." : punctuation is no word either
    assert translate.replace_unknown_words(hand_translation(attention)).replacements == ((2, 1),)


def test_copyable_positions_are_the_words_or_everything_but_eos():
    assert translate.copyable_positions(["je", "vois", "zorglub", ".", EOS_TOKEN]) == [0, 1, 2]
    assert translate.copyable_positions(["il", "a", "20", "ans", "!", EOS_TOKEN]) == [0, 1, 2, 3]  # numbers count
    assert translate.copyable_positions(["?", "!", EOS_TOKEN]) == [0, 1]  # no word: punctuation rather than nothing


def test_replace_unknown_leaves_translations_without_unk_alone_and_needs_attention():
    no_unk = hand_translation(None, ("i", "see", "it", EOS_TOKEN))
    assert translate.replace_unknown_words(no_unk) is no_unk
    with pytest.raises(ValueError, match="no attention"):
        translate.replace_unknown_words(hand_translation(None))


@pytest.mark.parametrize("beam_width", [1, 2])
def test_translate_replace_unknown_aligns_every_unk_output(tiny_course_data, beam_width):
    data = tiny_course_data
    model = small_model(data, "bahdanau", seed=4)
    force_output_bias(model, UNK_ID)  # every step emits <unk> until the length cap
    sentence = "je suis zorglub ."
    plain = translate.translate(model, data.src_vocab, data.tgt_vocab, sentence, beam_width=beam_width)
    assert set(plain.output_tokens) == {UNK_TOKEN} and plain.replacements == ()
    replaced = translate.translate(model, data.src_vocab, data.tgt_vocab, sentence, beam_width=beam_width,
                                   replace_unknown=True)
    assert UNK_TOKEN not in replaced.output_tokens and len(replaced.replacements) == len(plain.output_tokens)
    for t, j in replaced.replacements:
        words = translate.copyable_positions(plain.source_tokens)
        assert j == words[int(plain.attention[t, words].argmax())]  # the most attended source word
        assert replaced.output_tokens[t] == plain.source_tokens[j]
    batch = translate.translate_batch(model, data.src_vocab, data.tgt_vocab, [sentence, "il est grand ."],
                                      beam_width=beam_width, replace_unknown=True)
    assert batch[0].output_tokens == replaced.output_tokens
    assert set(batch[1].output_tokens) <= {"il", "est", "grand"}


def test_translate_replace_unknown_on_a_model_without_attention_says_why(tiny_course_data):
    model = small_model(tiny_course_data, "none")
    force_output_bias(model, UNK_ID)
    with pytest.raises(ValueError, match="no attention"):
        translate.translate(model, tiny_course_data.src_vocab, tiny_course_data.tgt_vocab, "je suis fatigue .",
                            replace_unknown=True)
