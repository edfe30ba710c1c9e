"""CUDA graphs of the decoder's side of a training step: the same numbers as Seq2Seq.forward, on the CPU (the module
they record) and on a GPU (the recording itself, replayed)."""
import copy
import warnings

import pytest
import torch
from helpers import fixed_batch, tiny_config

from course_utils import fast, train
from course_utils.data import make_loader
from course_utils.fast.cuda_graphs import DecoderGraphs, _DecoderLoss
from course_utils.loss import masked_nll_loss
from course_utils.seq2seq import Seq2Seq

needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA; the CPU tests above run everywhere")


@pytest.mark.parametrize("attention", ["bahdanau", "general", "none"])
@pytest.mark.parametrize("label_smoothing", [0.0, 0.1])
def test_decoder_loss_gives_the_loss_and_gradients_of_the_whole_model(tiny_course_data, attention, label_smoothing):
    torch.manual_seed(0)
    model = Seq2Seq(tiny_config(tiny_course_data, attention, dropout=0.0))
    batch = fixed_batch(tiny_course_data, tiny_course_data.splits.train[:9])
    log_probs = model(batch.src, batch.src_lengths, batch.tgt).log_probs
    expected = masked_nll_loss(log_probs, batch.tgt, label_smoothing=label_smoothing)
    expected.backward()
    expected_grads = [p.grad.clone() for p in model.parameters()]
    model.zero_grad(set_to_none=True)

    encoded = model.encoder(batch.src, batch.src_lengths)
    loss, nll = _DecoderLoss(model.decoder, 1.0, label_smoothing)(encoded.outputs, batch.src_mask, encoded.final,
                                                               batch.tgt)
    loss.backward()
    torch.testing.assert_close(loss, expected, rtol=0, atol=0)
    torch.testing.assert_close(nll, masked_nll_loss(log_probs.detach(), batch.tgt), rtol=0, atol=0)
    assert not nll.requires_grad
    for param, grad in zip(model.parameters(), expected_grads):  # the encoder's too, through keys and final
        torch.testing.assert_close(param.grad, grad, rtol=0, atol=0)


def test_train_step_through_the_decoders_side_equals_the_plain_step(tiny_course_data):
    """The `graphs` branch of train_step, fed the module the graphs record, trains exactly like the plain branch."""
    torch.manual_seed(0)
    plain = Seq2Seq(tiny_config(tiny_course_data, dropout=0.2))
    split = copy.deepcopy(plain)
    config = train.TrainConfig(learning_rate=1e-2, label_smoothing=0.1, teacher_forcing_ratio=0.5)
    batch = fixed_batch(tiny_course_data, tiny_course_data.splits.train[:9])
    results = []
    for model, graphs in ((plain, None), (split, _DecoderLoss(split.decoder, 0.5, 0.1))):
        optimizer = train.make_optimizer(model, config)
        torch.manual_seed(1)  # the same dropout masks and teacher-forcing coins for both
        results.append([train.train_step(model, batch, optimizer, config, graphs) for _ in range(3)])
    assert results[0] == results[1]
    for a, b in zip(plain.parameters(), split.parameters()):
        torch.testing.assert_close(a, b, rtol=0, atol=0)


def test_graphs_refuse_a_model_on_the_cpu_in_one_line(tiny_course_data):
    model = Seq2Seq(tiny_config(tiny_course_data))
    with pytest.raises(ValueError, match="need the model on a GPU.*on cpu"):
        DecoderGraphs(model, 1.0, 0.0, [])


def test_training_on_the_cpu_records_no_graphs(tiny_course_data, monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("DecoderGraphs built for a CPU run")

    monkeypatch.setattr(fast, "DecoderGraphs", refuse)
    assert train.TrainConfig().cuda_graphs  # on by default: it only matters on a GPU
    assert fast.training_graphs(Seq2Seq(tiny_config(tiny_course_data)), train.TrainConfig(), []) is None
    torch.manual_seed(0)
    history = train.train(Seq2Seq(tiny_config(tiny_course_data)), tiny_course_data,
                          train.TrainConfig(epochs=1, batch_size=8, device="cpu", eval_bleu=False), progress=False)
    assert history.epochs == 1


# ---------------------------------------------------------------------------------------------------- GPU

@needs_cuda
@pytest.mark.parametrize("attention", ["bahdanau", "general", "none"])  # "none" never reads the keys
def test_replayed_graphs_train_like_the_module_they_record(tiny_course_data, attention):
    """Dropout off: three epochs over batches of several shapes, replayed from the graphs and run as the module the
    graphs record (train_step's `graphs` branch both times), end at the same weights."""
    models = []
    for _ in range(2):  # the same initial weights
        torch.manual_seed(0)
        models.append(Seq2Seq(tiny_config(tiny_course_data, attention, dropout=0.0)).cuda())
    eager, graphed = models
    config = train.TrainConfig(learning_rate=1e-2, label_smoothing=0.1, device="cuda")
    batches = list(make_loader(tiny_course_data.splits.train, tiny_course_data.src_vocab,
                               tiny_course_data.tgt_vocab, batch_size=4, bucket_by="source"))  # one fixed order
    losses = {}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        graphs = DecoderGraphs(graphed, 1.0, 0.1, batches)
        for model, step_graphs in ((eager, _DecoderLoss(eager.decoder, 1.0, 0.1)), (graphed, graphs)):
            optimizer = train.make_optimizer(model, config)
            losses[step_graphs is graphs] = [
                train.train_step(model, batch.to("cuda"), optimizer, config, step_graphs).loss
                for _ in range(3) for batch in batches]
    assert len(graphs.graphs) >= 2
    assert losses[True] == pytest.approx(losses[False], rel=1e-4)  # replayed == recorded module
    assert not [str(w.message) for w in caught if "AccumulateGrad" in str(w.message)]  # a quiet run for students
    for a, b in zip(eager.parameters(), graphed.parameters()):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)


@needs_cuda
def test_the_cell_step_on_a_gpu_computes_what_nn_gru_computes(tiny_course_data):
    decoder = Seq2Seq(tiny_config(tiny_course_data)).decoder.cuda()
    rnn_input = torch.randn(5, decoder.gru.input_size, device="cuda")
    hidden = torch.randn(5, decoder.hidden_size, device="cuda")
    tf32, torch.backends.cudnn.allow_tf32 = torch.backends.cudnn.allow_tf32, False  # cuDNN's default rounds to TF32
    try:
        _, expected = decoder.gru(rnn_input.unsqueeze(1), hidden.unsqueeze(0))  # (1, B, H)
    finally:
        torch.backends.cudnn.allow_tf32 = tf32
    torch.testing.assert_close(decoder._gru_step(rnn_input, hidden), expected.squeeze(0), rtol=1e-5, atol=1e-5)
