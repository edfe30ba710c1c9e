"""Tests for benchmarks/classic_run.py: the 2017 tutorial's `trainIters` and `evaluate()` on course_utils.classic's
model, checked on the three-pair corpus of the tiny_ids fixture."""
import random
import sys
from pathlib import Path

import torch
from test_classic import state_dicts

from course_utils import classic
from course_utils.vocab import EOS_ID, MAX_LENGTH, SOS_ID

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
try:
    from classic_run import classic_translate, train_classic
finally:
    sys.path.remove(str(ROOT / "benchmarks"))


def teacher_forced_loss(model: classic.ClassicModel, pairs) -> float:
    """Mean per-token NLL of the pairs, teacher-forced, dropout off (the classic modules' own forward passes)."""
    encoder, decoder = model
    encoder.eval(), decoder.eval()
    total, count = 0.0, 0
    with torch.no_grad():
        for src_ids, tgt_ids in pairs:
            hidden = torch.zeros(1, 1, classic.HIDDEN_SIZE)
            buffer = torch.zeros(MAX_LENGTH, classic.HIDDEN_SIZE)
            for i, index in enumerate(src_ids):
                output, hidden = encoder(torch.tensor([index]), hidden)
                buffer[i] = output[0, 0]
            token = torch.tensor([[SOS_ID]])
            for index in tgt_ids:
                log_probs, hidden, _ = decoder(token, hidden, buffer)
                total -= log_probs[0, index].item()
                count += 1
                token = torch.tensor([[index]])
    encoder.train(), decoder.train()
    return total / count


def test_training_on_three_pairs_lowers_the_loss_and_learns_them(tiny_ids):
    pairs, src_size, tgt_size = tiny_ids
    untrained = train_classic(pairs, src_size, tgt_size, steps=0, seed=0, progress=False)
    run = train_classic(pairs, src_size, tgt_size, steps=300, seed=0, progress=False)
    assert untrained.steps == 0 and run.steps == 300
    before, after = teacher_forced_loss(untrained.model, pairs), teacher_forced_loss(run.model, pairs)
    assert before > 2.0  # about log(V) before training
    assert after < 0.1 * before  # about 2.65 -> 0.03 with this seed
    assert [classic_translate(run.model, src) for src, _ in pairs] == [tgt[:-1] for _, tgt in pairs]


def test_train_classic_counts_decoder_steps(tiny_ids):
    pairs, src_size, tgt_size = tiny_ids
    run = train_classic(pairs, src_size, tgt_size, steps=20, seed=0, progress=False)
    longest = max(len(tgt) for _, tgt in pairs)
    assert run.steps == 20
    assert 20 <= run.target_tokens <= 20 * longest  # at least one decoder step per pair, at most the whole target
    assert run.seconds > 0


def test_train_classic_is_deterministic_for_a_seed(tiny_ids):
    pairs, src_size, tgt_size = tiny_ids
    first = train_classic(pairs, src_size, tgt_size, steps=30, seed=3, progress=False)
    random.seed(12345)  # global state left by others must not matter: train_classic seeds both generators
    torch.manual_seed(12345)
    second = train_classic(pairs, src_size, tgt_size, steps=30, seed=3, progress=False)
    other = train_classic(pairs, src_size, tgt_size, steps=30, seed=4, progress=False)
    assert first.target_tokens == second.target_tokens
    first_state, second_state, other_state = map(state_dicts, (first.model, second.model, other.model))
    for name, value in first_state.items():
        assert torch.equal(value, second_state[name]), name
    assert any(not torch.equal(value, other_state[name]) for name, value in first_state.items())


def test_train_classic_stops_at_the_time_limit(tiny_ids):
    pairs, src_size, tgt_size = tiny_ids
    run = train_classic(pairs, src_size, tgt_size, steps=1000, seed=0, time_limit=0.0, progress=False)
    assert run.steps == 1  # the limit is checked after each step


def test_classic_translate_is_greedy_bounded_and_restores_training_mode(tiny_ids):
    pairs, src_size, tgt_size = tiny_ids
    model = classic.make_classic(src_size, tgt_size, seed=0)
    with torch.no_grad():
        model.decoder.out.bias.fill_(-100.0)
        model.decoder.out.bias[7] = 100.0  # never EOS: the output runs to the MAX_LENGTH cap
    long_source = [4, 5, 6] * 6  # longer than MAX_LENGTH: truncated to the buffer, not an IndexError
    assert classic_translate(model, long_source) == [7] * MAX_LENGTH
    assert model.encoder.training and model.decoder.training
    with torch.no_grad():
        model.decoder.out.bias[EOS_ID] = 200.0
    assert classic_translate(model, pairs[0][0]) == []  # EOS first: nothing, EOS itself not returned
