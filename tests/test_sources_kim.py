"""Kim's training post (../shared/seeds/002_*.txt), appendix A5: each of its six bugs pinned by the package's fix.

Each test runs the package on a tiny model and checks the fixed behaviour against what the post's line does:
the heatmap is the given sentence's (line 68), the epoch's loss is its mean (line 59), the training step frees its
graph (line 55), the loss scores every target word with the reference fed (lines 49-53), decoding stops at <eos> or
a cap from the source (line 79), and padded positions get no weight, so no column needs cutting (line 93).
"""
from pathlib import Path

import matplotlib
import pytest
import torch
import torch.nn.functional as F
from seeds import quotes
from torch.testing import assert_close

from course_utils import search, train
from course_utils.data import TranslationDataset, collate_batch, make_loader, pad_ids
from course_utils.decoder import DecoderState
from course_utils.seq2seq import ModelConfig, Seq2Seq
from course_utils.translate import translate, translate_batch
from course_utils.viz import plot_attention
from course_utils.vocab import EOS_ID, SOS_ID

matplotlib.use("Agg")

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "A5_training_post.ipynb"


def tiny_model(data, seed=0) -> Seq2Seq:
    """A small Bahdanau model without dropout: its training steps are deterministic."""
    torch.manual_seed(seed)
    return Seq2Seq(ModelConfig(len(data.src_vocab), len(data.tgt_vocab), "bahdanau", embedding_size=8,
                               hidden_size=12, dropout=0.0))


def batch_of(data, pairs):
    dataset = TranslationDataset(pairs, data.src_vocab, data.tgt_vocab)
    return collate_batch([dataset[i] for i in range(len(dataset))])


def different_lengths(pairs, n=3):
    """n pairs whose sources have n different lengths (so a batch of them is padded)."""
    chosen = {}
    for pair in pairs:
        chosen.setdefault(len(pair.source.split()), pair)
    assert len(chosen) >= n, "the tiny corpus needs sources of several lengths"
    return [chosen[length] for length in sorted(chosen)[:n]]


def test_the_appendix_quotes_each_bugs_lines():
    """Line 68 (stale tensor), 79 (reference-length decoding), 93 (cut columns), 59 (logged loss), 55
    (retain_graph), 49-53 (no teacher forcing, stop at <eos>): each inside one of A5's quotations of Kim's post."""
    covered = {line for source, first, last, _, _ in quotes(NOTEBOOK) if source == "002"
               for line in range(first, last + 1)}
    assert {68, 79, 93, 59, 55, 49, 53} <= covered, sorted(covered)


def test_each_sentence_of_a_batch_gets_its_own_translation_and_weights(tiny_course_data):
    """Line 68: the post's heatmap encodes the last training pair under sentence idx's labels. translate_batch must
    give every sentence what translating it alone gives: its own outputs and one weight column per source token."""
    model = tiny_model(tiny_course_data).eval()
    sentences = [pair.source for pair in different_lengths(tiny_course_data.splits.train)]
    together = translate_batch(model, tiny_course_data.src_vocab, tiny_course_data.tgt_vocab, sentences)
    for sentence, result in zip(sentences, together):
        alone = translate(model, tiny_course_data.src_vocab, tiny_course_data.tgt_vocab, sentence)
        assert result.source_tokens == sentence.split() + ["<eos>"] == alone.source_tokens
        assert result.output_tokens == alone.output_tokens
        assert result.attention.shape == (len(result.output_tokens), len(result.source_tokens))
        assert_close(result.attention, alone.attention)


def test_train_epoch_returns_the_epochs_mean_not_the_last_loss_over_n(tiny_course_data, monkeypatch):
    """Line 59 logs the last sentence's loss divided by the number of sentences. train_epoch must return the mean
    per target word over every step of the epoch."""
    steps = []
    original = train.train_step

    def recording(*args, **kwargs):
        result = original(*args, **kwargs)
        steps.append(result)
        return result

    monkeypatch.setattr(train, "train_step", recording)
    model = tiny_model(tiny_course_data)
    config = train.TrainConfig(batch_size=1, learning_rate=0.01, clip=0.0)
    loader = make_loader(tiny_course_data.splits.train[:8], tiny_course_data.src_vocab, tiny_course_data.tgt_vocab,
                         batch_size=1, shuffle=False, bucket_by=None)
    epoch_loss = train.train_epoch(model, loader, train.make_optimizer(model, config), config, progress=False)
    assert len(steps) == 8 and len({step.tokens for step in steps}) > 1  # sentences of different lengths
    mean = sum(step.loss * step.tokens for step in steps) / sum(step.tokens for step in steps)
    assert epoch_loss == pytest.approx(mean)
    assert epoch_loss != pytest.approx(steps[-1].loss / len(steps))  # what the post would log


def test_a_training_step_frees_its_graph(tiny_course_data, monkeypatch):
    """Line 55 backpropagates with retain_graph=True, which keeps the graph and lets a second backward add every
    gradient again without an error. The package's step must free it: a second backward through its loss raises."""
    second_backward_errors = []
    original = torch.Tensor.backward

    def backward_twice(self, *args, **kwargs):
        original(self, *args, **kwargs)
        try:
            original(self)
        except RuntimeError as error:
            second_backward_errors.append(str(error))
        else:
            second_backward_errors.append(None)

    model = tiny_model(tiny_course_data)
    config = train.TrainConfig(batch_size=2)
    batch = batch_of(tiny_course_data, tiny_course_data.splits.train[:2])
    optimizer = train.make_optimizer(model, config)
    monkeypatch.setattr(torch.Tensor, "backward", backward_twice)
    train.train_step(model, batch, optimizer, config)
    assert len(second_backward_errors) == 1 and second_backward_errors[0] is not None
    assert "backward through the graph a second time" in second_backward_errors[0]


def _teacher_forced_mean_nll(model, batch) -> float:
    """Every target word scored, each step reading the reference's previous word (SOS first), by decoder.step."""
    with torch.no_grad():
        memory, state = model.encode(batch.src, batch.src_lengths)
        total, words = 0.0, 0
        prev = torch.full((batch.tgt.size(0),), SOS_ID)
        for t in range(batch.tgt.size(1)):
            step = model.decoder.step(prev, state, memory)
            real = t < batch.tgt_lengths  # (B,)
            nll = F.nll_loss(step.log_probs, batch.tgt[:, t], reduction="none")  # (B,)
            total, words = total + float(nll[real].sum()), words + int(real.sum())
            prev, state = batch.tgt[:, t], step.state
    return total / words


def _post_loss(model, batch) -> tuple[float, int]:
    """Lines 47-53 for the first sentence: argmax fed back, stop at a predicted <eos> -> (summed loss, words)."""
    with torch.no_grad():
        length = int(batch.src_lengths[0])
        memory, state = model.encode(batch.src[:1, :length], batch.src_lengths[:1])
        prev, total = torch.tensor([SOS_ID]), 0.0
        for t in range(int(batch.tgt_lengths[0])):
            step = model.decoder.step(prev, state, memory)
            total += float(F.nll_loss(step.log_probs, batch.tgt[:1, t]))
            prev, state = step.log_probs.argmax(-1), step.state
            if prev.item() == EOS_ID:
                break
    return total, t + 1


def test_the_training_loss_scores_every_target_word_with_the_reference_fed(tiny_course_data):
    """Lines 49-53 feed back the model's own guess and stop the loss at a predicted <eos>. For a model that predicts
    <eos> first, the package's loss must still be the mean NLL of every target word, each step fed the reference."""
    model = tiny_model(tiny_course_data)
    with torch.no_grad():
        model.decoder.out.bias[EOS_ID] = 8.0  # <eos> is every step's best guess
    batch = batch_of(tiny_course_data, different_lengths(tiny_course_data.splits.train))
    assert int(batch.tgt_lengths.min()) >= 2
    expected = _teacher_forced_mean_nll(model, batch)
    post_total, post_words = _post_loss(model, batch)
    assert post_words == 1  # the post's loop scores only the first word of this model's sentence
    config = train.TrainConfig(batch_size=3, learning_rate=1e-9, clip=0.0)
    result = train.train_step(model, batch, train.make_optimizer(model, config), config)  # loss before the update
    assert result.tokens == int(batch.tgt_lengths.sum())
    assert result.loss == pytest.approx(expected, rel=1e-5)
    assert result.loss != pytest.approx(post_total / post_words, rel=1e-3)


def test_greedy_decoding_stops_at_eos_or_at_a_cap_from_the_source(tiny_course_data):
    """Line 79 decodes as many steps as a (stale) reference has words. Greedy decoding must stop each sentence at its
    own <eos>, else at default_max_steps of its source length: nothing else bounds it."""
    model = tiny_model(tiny_course_data).eval()
    sentences = different_lengths(tiny_course_data.splits.train)
    src, src_lengths = pad_ids([torch.tensor(tiny_course_data.src_vocab.encode(p.source)) for p in sentences])
    word = 5  # a vocabulary word, never <eos>
    with torch.no_grad():
        model.decoder.out.bias.zero_()
        model.decoder.out.bias[word] = 50.0  # never stops by itself
    endless = search.greedy_decode(model, src, src_lengths)
    caps = search.default_max_steps(src_lengths)
    assert endless.lengths.tolist() == caps.tolist() and len(set(caps.tolist())) == 3  # one cap per source length
    assert not (endless.tokens == EOS_ID).any()
    with torch.no_grad():
        model.decoder.out.bias[EOS_ID] = 100.0  # stops at once
    assert search.greedy_decode(model, src, src_lengths).lengths.tolist() == [1, 1, 1]


def test_padding_gets_no_weight_and_plot_attention_keeps_every_column(tiny_course_data):
    """Line 93 cuts the weight columns past the sentence, where the post's unmasked softmax put weight on zero rows.
    The package's attention must give padded positions exactly 0, rows summing to 1 over the real tokens, the same
    weights as the sentence alone; and plot_attention must draw every column it is given or refuse, never cut."""
    model = tiny_model(tiny_course_data).eval()
    sentences = different_lengths(tiny_course_data.splits.train)
    src, src_lengths = pad_ids([torch.tensor(tiny_course_data.src_vocab.encode(p.source)) for p in sentences])
    with torch.no_grad():
        memory, state = model.encode(src, src_lengths)
        weights = model.decoder.step(torch.full((3,), SOS_ID), state, memory).weights  # (B, S)
        for row, length in enumerate(src_lengths.tolist()):
            assert (weights[row, length:] == 0).all()
            assert_close(weights[row, :length].sum(), torch.tensor(1.0))
            alone_memory, alone_state = model.encode(src[row:row + 1, :length], src_lengths[row:row + 1])
            alone = model.decoder.step(torch.tensor([SOS_ID]), DecoderState(alone_state.hidden, None), alone_memory)
            assert_close(weights[row, :length], alone.weights[0])
    matrix = weights[:1, :]  # (T=1, S): the longest source's row spans every column
    labels = [f"w{j}" for j in range(matrix.shape[1])]
    drawn = plot_attention(matrix, labels, ["out"])
    assert drawn.ax.images[0].get_array().shape == tuple(matrix.shape)
    with pytest.raises(ValueError, match="source tokens"):
        plot_attention(matrix, labels[:-1], ["out"])  # fewer labels than columns: refused, not cut
    matplotlib.pyplot.close("all")
