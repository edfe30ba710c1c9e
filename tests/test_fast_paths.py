"""Tests for the decoders' fast paths (course_utils.fast) and for the absence of host synchronisation in the training
forward.

Fast paths (teacher_forcing_ratio == 1.0): Bahdanau's fused recurrence runs the embedding half of its GRU's input
product once over all T steps and writes the GRU out on its weights; Luong's runs the GRU and the attention once
over all steps; the packed loss runs the output layer on the real target steps only. Each must equal the plain step
loop `decode_steps` (log-probs, attention weights, final state, and every gradient) for any batch size, source
length and target length, padding included.

No host sync: a GPU runs kernels asynchronously; reading a value back to Python (.item(), `if tensor`, .tolist(),
.cpu()) makes the host wait for the device, once per decoder step if it happens in the loop. On the meta device
tensors have shapes but no values, so every such read raises: running the decoders there catches them on any
machine. With CUDA, the same forward also runs under torch.cuda.set_sync_debug_mode("error").
"""
import pytest
import torch
from helpers import fixed_batch, tiny_config
from torch.testing import assert_close

from course_utils.attention import masked_softmax
from course_utils.decoder import AttnDecoderRNN, BahdanauDecoder, DecoderRNN, LuongDecoder
from course_utils.fast import training_loss
from course_utils.fast.packed_loss import packed_log_probs
from course_utils.fast.recurrences import FastDecoder, _padding_bias, teacher_forced_steps
from course_utils.loss import masked_nll_loss
from course_utils.seq2seq import Seq2Seq
from course_utils.train import TrainConfig
from course_utils.vocab import SOS_ID

E, H, V = 6, 8, 13
FAST = {  # the decoders with a fast path
    "bahdanau": lambda key_size, dropout: BahdanauDecoder(E, H, key_size, V, dropout=dropout),
    "general": lambda key_size, dropout: LuongDecoder(E, H, key_size, V, score="general", dropout=dropout),
}
ALL = {
    **FAST,
    "concat": lambda key_size, dropout: LuongDecoder(E, H, key_size, V, score="concat", dropout=dropout),
    "none": lambda key_size, dropout: DecoderRNN(E, H, V, dropout=dropout, key_size=key_size),
    "location": lambda key_size, dropout: AttnDecoderRNN(H, V, dropout=dropout, max_length=9, key_size=key_size),
    "general+feeding": lambda key_size, dropout: LuongDecoder(E, H, key_size, V, dropout=dropout,
                                                              input_feeding=True),
}
# (B, S, T, source lengths): one sentence, a one-word source, a one-step target, padding in several rows
SHAPES = [
    (1, 1, 1, [1]),
    (1, 4, 5, [4]),
    (3, 1, 4, [1, 1, 1]),
    (2, 6, 1, [6, 2]),
    (4, 7, 6, [7, 1, 3, 5]),
    (5, 3, 9, [2, 3, 1, 3, 2]),
]


def build(kind, key_size=H, dropout=0.1, train=False, seed=0):
    """Eval mode (dropout off) by default: the fast path draws its dropout masks in another order than the loop."""
    torch.manual_seed(seed)
    return ALL[kind](key_size, dropout).train(train)


def make_inputs(B, S, T, lengths, key_size=H, seed=0, device="cpu"):
    """keys (B, S, K) zero on pads, mask (B, S), encoder_final (B, H), tgt_in (B, T) starting with SOS."""
    generator = torch.Generator().manual_seed(seed)
    mask = torch.arange(S).unsqueeze(0) < torch.tensor(lengths).unsqueeze(1)  # (B, S)
    keys = torch.randn(B, S, key_size, generator=generator) * mask.unsqueeze(-1)  # (B, S, K)
    encoder_final = torch.randn(B, H, generator=generator).tanh()  # (B, H)
    tgt_in = torch.randint(4, V, (B, T), generator=generator)  # (B, T)
    tgt_in[:, 0] = SOS_ID
    return [x.to(device) for x in (keys, mask, encoder_final, tgt_in)]


def run(decoder, keys, mask, encoder_final, tgt_in, plain, lengths=None, forward=None):
    """The fast path (FastDecoder; given `lengths`, the packed log-probabilities of the real steps, (N, V)) or
    decode_steps (the plain loop), then backward of a loss that reads every output; with `lengths`, the plain loop's
    loss reads the log-probabilities of the real steps only, as training's does.

    `forward`: called instead of FastDecoder(decoder). Returns the outputs and the gradients of every parameter and
    of the inputs keys and encoder_final."""
    keys = keys.detach().clone().requires_grad_()
    encoder_final = encoder_final.detach().clone().requires_grad_()
    decoder.zero_grad(set_to_none=True)
    memory, state = decoder.prepare_memory(keys, mask), decoder.init_state(encoder_final)
    if plain:
        out = decoder.decode_steps(tgt_in, state, memory)
    elif lengths is None:
        out = (forward or FastDecoder(decoder))(tgt_in, state, memory)
    else:
        steps = teacher_forced_steps(decoder, tgt_in, state, memory)
        gold = torch.roll(tgt_in, -1, dims=1)  # any (B, T) ids: only their selection is compared
        log_probs, _ = packed_log_probs(decoder.output_layer, steps, gold, lengths)  # (1, N, V)
        out = steps._replace(features=log_probs[0])  # log_probs (N, V), weights, state
    log_probs = out.features if not plain and lengths is not None else out.log_probs
    generator = torch.Generator().manual_seed(1)  # fixed random weights, so no output can cancel out in the sum
    read = torch.randn(tgt_in.shape + log_probs.shape[-1:], generator=generator)  # (B, T, V)
    if lengths is not None:
        real = torch.arange(tgt_in.shape[1]) < lengths.unsqueeze(1)  # (B, T)
        read = read[real] if log_probs.dim() == 2 else read * real.unsqueeze(-1)  # real steps only
    loss = (log_probs * read).sum()
    loss = loss + (out.weights * torch.randn(out.weights.shape, generator=generator)).sum()
    loss = loss + (out.state.hidden * torch.randn(out.state.hidden.shape, generator=generator)).sum()
    loss.backward()
    grads = {name: p.grad for name, p in decoder.named_parameters()}
    grads.update(keys=keys.grad, encoder_final=encoder_final.grad)
    return out, grads


def count_calls(module):
    calls = []
    module.register_forward_hook(lambda *args: calls.append(1))
    return calls


@pytest.mark.parametrize("train", [False, True], ids=["eval", "train-no-dropout"])
@pytest.mark.parametrize("key_size", [H, 2 * H])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "B{}-S{}-T{}".format(*s[:3]))
@pytest.mark.parametrize("kind", list(FAST))
def test_fast_path_equals_the_step_loop_with_gradients(kind, shape, key_size, train):
    B, S, T, lengths = shape
    decoder = build(kind, key_size, dropout=0.0 if train else 0.1, train=train)
    inputs = make_inputs(B, S, T, lengths, key_size)
    fast, fast_grads = run(decoder, *inputs, plain=False)
    plain, plain_grads = run(decoder, *inputs, plain=True)
    assert fast.log_probs.shape == (B, T, V) and fast.weights.shape == (B, T, S)
    assert_close(fast.log_probs, plain.log_probs)
    assert_close(fast.weights, plain.weights)
    assert_close(fast.state.hidden, plain.state.hidden)
    assert (fast.weights[~inputs[1].unsqueeze(1).expand(B, T, S)] == 0).all()  # exactly zero on padding
    assert fast_grads.keys() == plain_grads.keys()
    for name, grad in plain_grads.items():
        assert grad is not None, name
        assert_close(fast_grads[name], grad, msg=lambda m, name=name: f"gradient of {name}: {m}")


@pytest.mark.parametrize("shape", SHAPES[2:], ids=lambda s: "B{}-S{}-T{}".format(*s[:3]))
@pytest.mark.parametrize("kind", list(FAST))
def test_with_target_lengths_the_packed_path_computes_the_real_steps_only(kind, shape):
    """Given lengths, the output layer runs on the real steps, row by row: there everything equals the plain loop
    (gradients of a loss over the real steps included)."""
    B, S, T, lengths = shape
    tgt_lengths = torch.tensor([T - row % T for row in range(B)])  # the longest row is T, the others shorter
    decoder = build(kind, dropout=0.0, train=True)
    inputs = make_inputs(B, S, T, lengths)
    fast, fast_grads = run(decoder, *inputs, plain=False, lengths=tgt_lengths)
    plain, plain_grads = run(decoder, *inputs, plain=True, lengths=tgt_lengths)
    real = torch.arange(T) < tgt_lengths.unsqueeze(1)  # (B, T)
    assert fast.features.shape == (int(tgt_lengths.sum()), V)
    assert_close(fast.features, plain.log_probs[real])
    assert_close(fast.weights, plain.weights)
    for name, grad in plain_grads.items():
        assert_close(fast_grads[name], grad, msg=lambda m, name=name: f"gradient of {name}: {m}")


def test_bahdanau_fast_path_runs_the_output_layer_once_and_no_module_in_its_loop():
    """The fused loop uses the GRU's and the scorer's weights, not their modules; the output layer runs once over
    (B, T, H). The decoder's own teacher-forced forward calls attention and GRU once per step and the output layer
    once; the plain loop calls all of them once per step, as it does for any other ratio."""
    decoder = build("bahdanau")
    keys, mask, encoder_final, tgt_in = make_inputs(4, 7, 6, [7, 1, 3, 5])
    memory, state = decoder.prepare_memory(keys, mask), decoder.init_state(encoder_final)
    out_calls, gru_calls, attention_calls = count_calls(decoder.out), count_calls(decoder.gru), \
        count_calls(decoder.attention)
    FastDecoder(decoder)(tgt_in, state, memory)
    assert (len(out_calls), len(gru_calls), len(attention_calls)) == (1, 0, 0)
    decoder(tgt_in, state, memory)
    assert (len(out_calls), len(gru_calls), len(attention_calls)) == (1 + 1, 6, 6)
    decoder.decode_steps(tgt_in, state, memory)
    assert (len(out_calls), len(gru_calls)) == (1 + 1 + 6, 6 + 6)
    FastDecoder(decoder)(tgt_in, state, memory, teacher_forcing_ratio=0.5)  # sampling needs each step's argmax
    assert len(out_calls) == 1 + 1 + 6 + 6


@pytest.mark.parametrize("shape", SHAPES[3:], ids=lambda s: "B{}-S{}-T{}".format(*s[:3]))
def test_bahdanau_teacher_forced_forward_equals_the_step_loop(shape):
    """BahdanauDecoder.forward (embed all, recur per step, output layer once) against decode_steps."""
    B, S, T, lengths = shape
    decoder = build("bahdanau", dropout=0.0, train=True)
    inputs = make_inputs(B, S, T, lengths)
    fast, fast_grads = run(decoder, *inputs, plain=False, forward=decoder)
    plain, plain_grads = run(decoder, *inputs, plain=True)
    assert_close(fast.log_probs, plain.log_probs)
    assert_close(fast.weights, plain.weights)
    for name, grad in plain_grads.items():
        assert_close(fast_grads[name], grad, msg=lambda m, name=name: f"gradient of {name}: {m}")


@pytest.mark.parametrize("kind", list(FAST))
def test_packed_log_probs_are_the_real_steps_row_by_row(kind):
    """packed_log_probs returns (1, N, V): the output layer on the features of the real steps, in row-major order
    (the rows of the full (B, T, V) there), with their targets (1, N); sampling has no fast path."""
    B, S, T, lengths = SHAPES[4]
    tgt_lengths = torch.tensor([T - row % T for row in range(B)])
    decoder = build(kind)
    keys, mask, encoder_final, tgt_in = make_inputs(B, S, T, lengths)
    memory, state = decoder.prepare_memory(keys, mask), decoder.init_state(encoder_final)
    steps = teacher_forced_steps(decoder, tgt_in, state, memory)
    tgt = torch.roll(tgt_in, -1, dims=1)  # (B, T)
    packed, targets = packed_log_probs(decoder.output_layer, steps, tgt, tgt_lengths)  # (1, N, V), (1, N)
    real = torch.arange(T) < tgt_lengths.unsqueeze(1)  # (B, T)
    assert packed.shape == (1, int(tgt_lengths.sum()), V)
    assert torch.equal(packed[0], decoder.output_layer(*(x[real] for x in steps.features)))  # the same rows, in order
    assert_close(packed[0], decoder.output_layer(*steps.features)[real])  # the full (B, T, V) at the real steps
    assert torch.equal(targets[0], tgt[real])
    assert teacher_forced_steps(decoder, tgt_in, state, memory, teacher_forcing_ratio=0.5) is None


@pytest.mark.parametrize("attention, feeding", [("bahdanau", False), ("general", False), ("general", True),
                                                 ("none", False)])
@pytest.mark.parametrize("label_smoothing", [0.0, 0.1])
def test_training_loss_through_the_fast_paths_equals_the_plain_forwards(tiny_course_data, attention, feeding,
                                                                         label_smoothing):
    """fast.training_loss, the one choice train_step makes: its loss, NLL and gradients equal the decoder's own
    forward with the loss over (B, T, V) (fast_paths=False), whichever path it chooses."""
    torch.manual_seed(0)
    model = Seq2Seq(tiny_config(tiny_course_data, attention, dropout=0.0, input_feeding=feeding))
    batch = fixed_batch(tiny_course_data, tiny_course_data.splits.train[:9])
    config = TrainConfig(label_smoothing=label_smoothing)
    results = []
    for fast_paths in (True, False):
        model.zero_grad(set_to_none=True)
        loss, nll = training_loss(model, batch, config, fast_paths=fast_paths)
        loss.backward()
        results.append((loss.detach(), nll, [p.grad.clone() for p in model.parameters()]))
    (fast_loss, fast_nll, fast_grads), (loss, nll, grads) = results
    log_probs = model(batch.src, batch.src_lengths, batch.tgt).log_probs  # (B, T, V)
    expected = masked_nll_loss(log_probs, batch.tgt, label_smoothing=label_smoothing)
    assert_close(loss, expected.detach(), rtol=0, atol=0)
    assert_close(fast_loss, loss)
    assert_close(fast_nll, nll)
    for fast_grad, grad in zip(fast_grads, grads):
        assert_close(fast_grad, grad)


def test_padding_bias_gives_exactly_masked_softmax_and_checks_the_mask():
    scores = torch.randn(3, 5)
    mask = torch.tensor([[1, 1, 1, 0, 0], [1, 0, 0, 0, 0], [1, 1, 1, 1, 1]], dtype=torch.bool)
    assert torch.equal(torch.softmax(scores + _padding_bias(mask), dim=-1), masked_softmax(scores, mask))
    with pytest.raises(ValueError, match="at least one True"):
        _padding_bias(torch.tensor([[True, False], [False, False]]))


def test_bahdanau_fast_path_in_train_mode_uses_dropout_like_the_loop():
    """With dropout on, fast path and loop draw different masks, but both drop: train-mode outputs differ from
    eval mode, and the fast path's mean log-likelihood stays close to the loop's."""
    decoder = build("bahdanau", dropout=0.5, train=True)
    keys, mask, encoder_final, tgt_in = make_inputs(64, 7, 6, [7, 1, 3, 5] * 16)
    memory, state = decoder.prepare_memory(keys, mask), decoder.init_state(encoder_final)
    torch.manual_seed(0)
    fast = FastDecoder(decoder)(tgt_in, state, memory).log_probs
    plain = decoder.decode_steps(tgt_in, state, memory).log_probs
    decoder.eval()
    clean = FastDecoder(decoder)(tgt_in, state, memory).log_probs
    assert not torch.allclose(fast, clean) and not torch.allclose(plain, clean)
    assert abs(fast.mean() - plain.mean()) < 0.1 * abs(clean.mean())


# ---------------------------------------------------------------- no host synchronisation

def test_the_meta_device_catches_host_reads():
    """The instrument itself: on the meta device, every way of reading a value back to Python raises."""
    x = torch.ones(3, device="meta")
    for read in (lambda: x.sum().item(), lambda: bool(x.any()), lambda: x.tolist(), lambda: x.cpu(),
                 lambda: float(x[0]), lambda: x.any().all().numpy()):
        with pytest.raises((RuntimeError, NotImplementedError, TypeError)):
            read()


def forbidden_read(self, *args, **kwargs):
    raise AssertionError("a tensor's value was read back to Python in the training forward")


@pytest.mark.parametrize("ratio", [1.0, 0.5, 0.0])
@pytest.mark.parametrize("kind", list(ALL))
def test_training_forward_and_backward_read_no_value_back_to_the_host(kind, ratio, monkeypatch):
    decoder = build(kind, key_size=2 * H, train=True).to("meta")
    keys, mask, encoder_final, tgt_in = make_inputs(4, 7, 6, [7, 1, 3, 5], key_size=2 * H, device="meta")
    encoder_final.requires_grad_()
    memory, state = decoder.prepare_memory(keys, mask), decoder.init_state(encoder_final)
    with monkeypatch.context() as patch:
        for name in ("item", "__bool__", "tolist", "numpy", "__float__", "__int__", "__index__"):
            patch.setattr(torch.Tensor, name, forbidden_read)  # CPU tensors too, e.g. a coin read with .item()
        out = decoder(tgt_in, state, memory, teacher_forcing_ratio=ratio)  # meta: raises on any read anyway
        out.log_probs.sum().backward()
        memory, state = decoder.prepare_memory(keys, mask), decoder.init_state(encoder_final)
        FastDecoder(decoder)(tgt_in, state, memory, teacher_forcing_ratio=ratio).log_probs.sum().backward()
        memory, state = decoder.prepare_memory(keys, mask), decoder.init_state(encoder_final)
        steps = teacher_forced_steps(decoder, tgt_in, state, memory, ratio)
        if steps is not None:
            lengths = torch.tensor([6, 1, 3, 5])  # on the CPU, as training passes them
            packed_log_probs(decoder.output_layer, steps, tgt_in, lengths)[0].sum().backward()
    assert out.log_probs.shape == (4, 6, V) and encoder_final.grad.shape == encoder_final.shape


def test_masked_softmax_reads_no_value_back_off_the_cpu():
    scores, mask = torch.randn(2, 4, 3, device="meta"), torch.ones(2, 3, dtype=torch.bool, device="meta")
    assert masked_softmax(scores, mask).shape == (2, 4, 3)
    with pytest.raises(ValueError, match="at least one True"):  # on the CPU the all-padding row is still caught
        masked_softmax(torch.randn(2, 3), torch.tensor([[True, False, False], [False, False, False]]))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA; the meta-device tests above run everywhere")
@pytest.mark.parametrize("ratio", [1.0, 0.5])
@pytest.mark.parametrize("kind", ["bahdanau", "general", "general+feeding"])
def test_cuda_training_forward_does_not_synchronise(kind, ratio):
    decoder = build(kind, train=True).cuda()
    keys, mask, encoder_final, tgt_in = make_inputs(4, 7, 6, [7, 1, 3, 5], device="cuda")
    memory, state = decoder.prepare_memory(keys, mask), decoder.init_state(encoder_final)
    fast = FastDecoder(decoder)
    fast(tgt_in, state, memory, teacher_forcing_ratio=ratio)  # warm-up (cuDNN and allocator set-up)
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        out = fast(tgt_in, state, memory, teacher_forcing_ratio=ratio)
        decoder(tgt_in, state, memory, teacher_forcing_ratio=ratio)
    finally:
        torch.cuda.set_sync_debug_mode("default")
    assert out.log_probs.shape == (4, 6, V)
