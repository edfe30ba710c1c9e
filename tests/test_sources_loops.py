"""The training and decoding loops' bugs of three sources (appendix A6), each pinned against the package's fix.

Carton's lecture (after Robertson's 2017 tutorial) divides a pair's summed loss by the whole target length even when
free running stopped at a predicted <eos>; the Dissected Attention Network notebook feeds its decoder the first
*character* of the English sentence, looked up in the French vocabulary, and stops a teacher-forced loop at a
predicted <eos>; Loye's article tests `torch.cuda.is_available` without calling it, starts the German decoder from the
English vocabulary's _SOS, saves the optimizer object (not its state) once after training, and decodes `while True`.
Each test fails when the package's fix is undone. The quotations themselves are checked by test_sources_quotes.
"""
import io
import pickle

import pytest
import torch
import torch.nn.functional as F
from torch.testing import assert_close

from course_utils import classic, runtime
from course_utils.checkpoints import CheckpointError, read_checkpoint
from course_utils.data import Pair, TranslationDataset, collate_batch
from course_utils.fast import training_loss
from course_utils.search import beam_search, default_max_steps, greedy_decode
from course_utils.seq2seq import ModelConfig, Seq2Seq, teacher_forced_input
from course_utils.train import TrainConfig, train_step
from course_utils.vocab import EOS_ID, PAD_ID, SOS_ID, Vocab

FRENCH = ["je suis fatigue .", "il est tres grand .", "nous sommes amis ."]
ENGLISH = ["i am tired .", "he is very tall .", "we re friends ."]


@pytest.fixture
def vocabs():
    return Vocab.build(FRENCH), Vocab.build(ENGLISH)


def tiny_model(src_vocab, tgt_vocab, eos_bias: float = 0.0, seed: int = 0) -> Seq2Seq:
    """A small untrained Bahdanau model without dropout; eos_bias added to the output layer's <eos> logit."""
    torch.manual_seed(seed)
    model = Seq2Seq(ModelConfig(len(src_vocab), len(tgt_vocab), embedding_size=8, hidden_size=16, dropout=0.0))
    with torch.no_grad():
        model.decoder.out.bias[EOS_ID] += eos_bias
    return model


def the_batch(src_vocab, tgt_vocab):
    """The three pairs as one padded batch (targets of 5, 6 and 5 ids: one row is padded)."""
    dataset = TranslationDataset([Pair(f, e) for f, e in zip(FRENCH, ENGLISH, strict=True)], src_vocab, tgt_vocab)
    return collate_batch([dataset[i] for i in range(len(dataset))])


def per_token_nll(model, batch) -> torch.Tensor:
    """-log p of every target token, teacher forced, written out step by step: (B, T), 0 at the pads."""
    memory, state = model.encode(batch.src, batch.src_lengths)
    tokens, rows = teacher_forced_input(batch.tgt), []
    for t in range(batch.tgt.size(1)):
        step = model.decoder.step(tokens[:, t], state, memory)
        state = step.state
        rows.append(-step.log_probs.gather(1, batch.tgt[:, t:t + 1]).squeeze(1))  # (B,)
    return torch.stack(rows, dim=1) * (batch.tgt != PAD_ID)  # (B, T)


# ------------------------------------------------------------------------------------ Carton's lecture (003)
def test_the_classic_baseline_divides_by_the_whole_target_after_an_early_eos(monkeypatch, vocabs):
    """The baseline keeps the tutorial's number (documented in classic.train_step); the real mean is loss / steps."""
    src_vocab, tgt_vocab = vocabs
    monkeypatch.setattr(classic, "_TEACHER_FORCING_RATIO", 0.0)  # free running: the branch that can stop early
    model = classic.make_classic(len(src_vocab), len(tgt_vocab), seed=0)
    with torch.no_grad():
        model.decoder.out.bias[EOS_ID] = 100.0  # <eos> is every step's argmax: the loop stops after one step
    model.decoder.dropout.p = 0.0
    optimizers = [torch.optim.SGD(part.parameters(), lr=0.0) for part in model]
    src_ids, tgt_ids = src_vocab.encode(FRENCH[1]), tgt_vocab.encode(ENGLISH[1])
    reported, steps = classic.train_step(model, optimizers, src_ids, tgt_ids)
    with torch.no_grad():  # the one step the loop ran, recomputed
        hidden, buffer = torch.zeros(1, 1, classic.HIDDEN_SIZE), torch.zeros(10, classic.HIDDEN_SIZE)
        for i, index in enumerate(src_ids):
            output, hidden = model.encoder(torch.tensor([index]), hidden)
            buffer[i] = output[0, 0]
        log_probs, _, _ = model.decoder(torch.tensor([[SOS_ID]]), hidden, buffer)
        first = F.nll_loss(log_probs, torch.tensor([tgt_ids[0]])).item()
    assert steps == 1 and len(tgt_ids) == 6
    assert reported == pytest.approx(first / 6, rel=1e-5)  # one token's loss spread over six
    assert reported * len(tgt_ids) / steps == pytest.approx(first, rel=1e-5)  # the real mean per scored token


@pytest.mark.parametrize("ratio", [1.0, 0.0])
def test_the_package_reports_the_mean_over_every_real_target_token(vocabs, ratio):
    """train_step's loss is the NLL summed over real tokens / their number: no pads, no early stop, any ratio."""
    src_vocab, tgt_vocab = vocabs
    model = tiny_model(src_vocab, tgt_vocab, eos_bias=30.0)  # <eos> is every step's argmax, as above
    batch = the_batch(src_vocab, tgt_vocab)
    assert batch.tgt_lengths.tolist() == [5, 6, 5]
    config = TrainConfig(teacher_forcing_ratio=ratio, clip=0.0)
    if ratio == 1.0:
        with torch.no_grad():
            expected = per_token_nll(model, batch).sum() / batch.tgt_lengths.sum()
    result = train_step(model, batch, torch.optim.SGD(model.parameters(), lr=0.0), config)
    assert result.tokens == 16  # every real target token scored, none of the pads
    if ratio == 1.0:
        assert_close(torch.tensor(result.loss), expected)


# ------------------------------------------------------------------- the Dissected Attention Network notebook (000)
def test_the_decoder_starts_from_sos_and_reads_whole_words_of_the_target_vocabulary(vocabs):
    src_vocab, tgt_vocab = vocabs
    ids = tgt_vocab.encode(ENGLISH[0])
    assert tgt_vocab.decode(ids) == ENGLISH[0].split(" ") and len(ids) == 5  # words, not the characters of "i am"
    batch = the_batch(src_vocab, tgt_vocab)
    assert teacher_forced_input(batch.tgt)[:, 0].tolist() == [SOS_ID] * 3  # teacher forcing: <sos> first
    model, first_inputs = tiny_model(src_vocab, tgt_vocab), []
    original = model.decoder.step

    def spy(prev_tokens, state, memory, *args):
        first_inputs.append(prev_tokens.tolist())
        return original(prev_tokens, state, memory, *args)

    model.decoder.step = spy
    greedy_decode(model, batch.src, batch.src_lengths, max_steps=2)
    assert first_inputs[0] == [SOS_ID] * 3  # greedy decoding: <sos> first too


def test_teacher_forced_training_scores_every_target_token_even_when_eos_is_predicted(vocabs):
    src_vocab, tgt_vocab = vocabs
    model = tiny_model(src_vocab, tgt_vocab, eos_bias=30.0)
    batch = the_batch(src_vocab, tgt_vocab)
    config = TrainConfig(teacher_forcing_ratio=1.0)
    with torch.no_grad():
        output = model(batch.src, batch.src_lengths, batch.tgt, teacher_forcing_ratio=1.0)
        assert (output.log_probs.argmax(-1) == EOS_ID).all()  # the notebook's loop would stop at the first step
        assert output.log_probs.shape[1] == batch.tgt.size(1)  # the package's forward runs every step
        expected = per_token_nll(model, batch).sum() / batch.tgt_lengths.sum()
        for fast_paths in (True, False):
            _, nll = training_loss(model, batch, config, fast_paths=fast_paths)
            assert_close(nll, expected)


# -------------------------------------------------------------------------------------------- Loye's article (004)
def test_the_auto_device_calls_cuda_is_available(monkeypatch):
    assert bool(torch.cuda.is_available)  # the article's test: a function object, true on every machine
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert runtime.resolve_device("auto") == torch.device("cpu")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert runtime.resolve_device("auto").type == "cuda"


def test_every_vocabulary_puts_sos_at_the_same_id(vocabs):
    src_vocab, tgt_vocab = vocabs
    assert src_vocab.word2index["<sos>"] == tgt_vocab.word2index["<sos>"] == SOS_ID
    with pytest.raises(ValueError, match="first words"):  # a vocabulary laid out otherwise is refused
        Vocab(["<sos>", "<pad>", "<eos>", "<unk>", "i"])


def test_a_file_holding_an_optimizer_object_is_refused_and_its_state_dict_is_not(tmp_path, vocabs):
    src_vocab, tgt_vocab = vocabs
    model = tiny_model(src_vocab, tgt_vocab)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    article = tmp_path / "model.pt"
    torch.save({"decoder": model.decoder.state_dict(), "d_optimizer": optimizer}, article)  # the article's save
    with pytest.raises(pickle.UnpicklingError):
        torch.load(article, weights_only=True)
    with pytest.raises(CheckpointError, match="pickled code"):  # the package's one loader refuses it in one line
        read_checkpoint(article, build=lambda payload: model)
    buffer = io.BytesIO()
    torch.save({"decoder": model.decoder.state_dict(), "d_optimizer": optimizer.state_dict()}, buffer)
    buffer.seek(0)
    assert set(torch.load(buffer, weights_only=True)) == {"decoder", "d_optimizer"}  # state dicts: plain data


def test_greedy_decoding_and_beam_search_stop_at_the_length_cap_when_eos_never_comes(vocabs):
    src_vocab, tgt_vocab = vocabs
    model = tiny_model(src_vocab, tgt_vocab, eos_bias=-1e4)  # never <eos>: the article's loop would not end
    batch = the_batch(src_vocab, tgt_vocab)
    caps = default_max_steps(batch.src_lengths)
    assert caps.tolist() == [15, 17, 15]  # 2 S + 5, each sentence its own
    decoded = greedy_decode(model, batch.src, batch.src_lengths)
    assert decoded.lengths.tolist() == caps.tolist()
    assert not (decoded.tokens == EOS_ID).any()
    [best, *_] = beam_search(model, batch.src[0, :batch.src_lengths[0]], beam_width=2)
    assert not best.finished and len(best.tokens) == caps[0]
