"""Tests for course_utils.classic: the 2017 tutorial's per-sentence recipe (the benchmarks' baseline).

Its decoder must compute exactly what the package's batch-first exhibit `decoder.AttnDecoderRNN` computes, so the
benchmarks compare training recipes, not two different models; its training and greedy decoding are checked on a
three-pair corpus held in memory. The tutorial's `trainIters` and `evaluate()`, which the benchmarks run, are
tested in test_classic_run.py.
"""
import pytest
import torch
from torch.testing import assert_close

from course_utils import classic
from course_utils.decoder import AttnDecoderRNN
from course_utils.vocab import EOS_ID, MAX_LENGTH, SOS_ID

H, V = 16, 13


def copy_weights(source: torch.nn.Module, target: torch.nn.Module) -> list[str]:
    """Copy every parameter of `source` into the parameter of `target` with the same name and shape."""
    target_params = dict(target.named_parameters())
    source_params = dict(source.named_parameters())
    assert sorted(source_params) == sorted(target_params)
    with torch.no_grad():
        for name, value in source_params.items():
            assert target_params[name].shape == value.shape, name
            target_params[name].copy_(value)
    return sorted(source_params)


def twin_decoders(seed: int = 0):
    """The classic decoder (random init) and the package's exhibit holding the same weights, both in eval mode."""
    torch.manual_seed(seed)
    old = classic.ClassicAttnDecoder(H, V, dropout_p=0.5).eval()
    new = AttnDecoderRNN(H, V, dropout=0.5).eval()  # max_length defaults to MAX_LENGTH, as the classic one
    names = copy_weights(old, new)
    assert names == ["attn.bias", "attn.weight", "attn_combine.bias", "attn_combine.weight", "embedding.weight",
                     "gru.bias_hh_l0", "gru.bias_ih_l0", "gru.weight_hh_l0", "gru.weight_ih_l0", "out.bias",
                     "out.weight"]
    return old, new


def classic_buffer(outputs: torch.Tensor) -> torch.Tensor:
    """Encoder outputs (S, H) -> the tutorial's zero-padded (MAX_LENGTH, H) buffer."""
    buffer = torch.zeros(MAX_LENGTH, outputs.shape[1])
    buffer[:outputs.shape[0]] = outputs
    return buffer


def test_classic_decoder_computes_what_the_package_exhibit_computes_step_by_step():
    old, new = twin_decoders()
    generator = torch.Generator().manual_seed(1)
    lengths = [6, 3]  # a batch of two sentences of different lengths for the package; one at a time for classic
    outputs = [torch.randn(n, H, generator=generator) for n in lengths]
    initial = torch.randn(len(lengths), H, generator=generator).tanh()  # (B, H)
    tokens = torch.tensor([[SOS_ID, 5, 7, 4, 9], [SOS_ID, 8, 8, 11, 6]])  # (B, T): the inputs of five steps

    keys = torch.zeros(len(lengths), max(lengths), H)  # (B, S, H), zeros after each sentence's end
    for row, sentence in enumerate(outputs):
        keys[row, :lengths[row]] = sentence
    mask = torch.arange(max(lengths)).unsqueeze(0) < torch.tensor(lengths).unsqueeze(1)  # (B, S)
    memory = new.prepare_memory(keys, mask)
    state = new.init_state(initial)
    classic_hidden = [initial[row].view(1, 1, H) for row in range(len(lengths))]
    with torch.no_grad():
        for t in range(tokens.shape[1]):
            step = new.step(tokens[:, t], state, memory)
            state = step.state
            for row in range(len(lengths)):
                log_probs, classic_hidden[row], weights = old(tokens[row, t].view(1, 1), classic_hidden[row],
                                                              classic_buffer(outputs[row]))
                assert log_probs.shape == (1, V) and weights.shape == (1, MAX_LENGTH)
                assert_close(step.log_probs[row:row + 1], log_probs)
                assert_close(step.state.hidden[row], classic_hidden[row].view(H))
                assert_close(step.weights[row:row + 1], weights)


def test_twin_decoders_really_depend_on_the_copied_weights():
    """Guards the test above: with one weight changed, the two decoders no longer agree."""
    old, new = twin_decoders()
    with torch.no_grad():
        new.out.bias[3] += 1.0
    token, hidden = torch.tensor([[SOS_ID]]), torch.zeros(1, 1, H)
    outputs = torch.randn(4, H, generator=torch.Generator().manual_seed(2))
    memory = new.prepare_memory(outputs.unsqueeze(0), torch.ones(1, 4, dtype=torch.bool))
    with torch.no_grad():
        log_probs, _, _ = old(token, hidden, classic_buffer(outputs))
        step = new.step(token.view(1), new.init_state(hidden.view(1, H)), memory)
    assert not torch.allclose(step.log_probs, log_probs)


def test_classic_encoder_token_loop_equals_one_gru_call():
    torch.manual_seed(0)
    encoder = classic.ClassicEncoder(V, H)
    ids = torch.tensor([5, 9, 4, EOS_ID])
    hidden = torch.zeros(1, 1, H)
    outputs = []
    for index in ids:
        output, hidden = encoder(index.view(1), hidden)
        assert output.shape == hidden.shape == (1, 1, H)
        outputs.append(output.view(H))
    whole, final = encoder.gru(encoder.embedding(ids).unsqueeze(1), torch.zeros(1, 1, H))  # (S, 1, H)
    assert_close(torch.stack(outputs), whole.view(-1, H))
    assert_close(hidden, final)


def state_dicts(model: classic.ClassicModel) -> dict[str, torch.Tensor]:
    """Copies of both modules' weights, named encoder.<name> and decoder.<name>."""
    return {f"{part}.{name}": value.clone() for part, module in zip(("encoder", "decoder"), model, strict=True)
            for name, value in module.state_dict().items()}


@pytest.mark.parametrize("ratio, expect_all_steps", [(1.0, True), (0.0, False)])
def test_train_step_teacher_forcing_runs_the_whole_target(monkeypatch, tiny_ids, ratio, expect_all_steps):
    pairs, src_size, tgt_size = tiny_ids
    monkeypatch.setattr(classic, "_TEACHER_FORCING_RATIO", ratio)
    model = classic.make_classic(src_size, tgt_size, seed=0)
    # an output bias that makes EOS the untrained model's first guess, so free running stops after one step
    with torch.no_grad():
        model.decoder.out.bias[EOS_ID] = 100.0
    optimizers = [torch.optim.SGD(part.parameters(), lr=0.0) for part in model]
    src_ids, tgt_ids = pairs[0]
    loss, steps = classic.train_step(model, optimizers, src_ids, tgt_ids)
    assert steps == (len(tgt_ids) if expect_all_steps else 1)
    assert loss > 0


def test_train_step_changes_the_weights_of_both_modules(tiny_ids):
    pairs, src_size, tgt_size = tiny_ids
    model = classic.make_classic(src_size, tgt_size, seed=0)
    before = state_dicts(model)
    optimizers = [torch.optim.SGD(part.parameters(), lr=classic.LEARNING_RATE) for part in model]
    classic.train_step(model, optimizers, *pairs[0])
    after = state_dicts(model)
    for part in ("encoder", "decoder"):
        changed = [name for name in before if name.startswith(part) and not torch.equal(before[name], after[name])]
        assert changed, f"no {part} weight changed"


def test_make_classic_is_seeded_and_sized(tiny_ids):
    _, src_size, tgt_size = tiny_ids
    first, second = classic.make_classic(src_size, tgt_size, seed=5), classic.make_classic(src_size, tgt_size, seed=5)
    assert first.encoder.embedding.weight.shape == (src_size, classic.HIDDEN_SIZE)
    assert first.decoder.out.weight.shape == (tgt_size, classic.HIDDEN_SIZE)
    assert first.decoder.attn.out_features == MAX_LENGTH
    for name, value in state_dicts(first).items():
        assert torch.equal(value, state_dicts(second)[name]), name
