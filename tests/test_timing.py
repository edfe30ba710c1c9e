"""Tests for course_utils.timing: what is called, in which order, with which settings, and what is recorded.

No test compares speeds (a busy machine makes any "A is faster than B" flaky): fake callables log their calls, and
tiny models check the decoder and training measurements against the model's own forward.
"""
import pytest
import torch
from torch.testing import assert_close

from course_utils.data import collate_batch
from course_utils.loss import masked_nll_loss
from course_utils.seq2seq import ModelConfig, Seq2Seq
from course_utils.timing import Timing, decoder_step_calls, forward_backward, time_calls, tokens_per_second
from course_utils.vocab import EOS_ID

V_SRC, V_TGT = 11, 13


def logging_call(log, name, value=None):
    """A call that appends `name` to `log` (with the thread count and autograd state) and returns `value`."""
    def call():
        log.append((name, torch.get_num_threads(), torch.is_grad_enabled()))
        return value
    return call


def tiny_model(attention="bahdanau"):
    torch.manual_seed(0)
    config = ModelConfig(V_SRC, V_TGT, attention=attention, embedding_size=6, hidden_size=8, dropout=0.0)
    return Seq2Seq(config).eval()


def tiny_batch():
    generator = torch.Generator().manual_seed(1)
    pairs = []
    for src_length, tgt_length in [(4, 3), (2, 5), (5, 2)]:
        src = torch.cat([torch.randint(4, V_SRC, (src_length - 1,), generator=generator), torch.tensor([EOS_ID])])
        tgt = torch.cat([torch.randint(4, V_TGT, (tgt_length - 1,), generator=generator), torch.tensor([EOS_ID])])
        pairs.append((src, tgt))
    return collate_batch(pairs)  # src (3, 5), tgt (3, 5)


def test_time_calls_alternates_the_calls_and_records_only_the_timed_rounds():
    log = []
    counter = iter(range(100))
    calls = {"a": lambda: log.append("a") or next(counter), "b": lambda: log.append("b") or next(counter)}
    timings = time_calls(calls, rounds=3, warmup=2)
    assert log == ["a", "b"] * 5  # 2 warm-up rounds, then 3 timed ones, round robin
    assert list(timings) == ["a", "b"]
    assert timings["a"].results == [4, 6, 8] and timings["b"].results == [5, 7, 9]  # the timed rounds' returns
    for timing in timings.values():
        assert len(timing.seconds) == 3 and all(s > 0 for s in timing.seconds)
        assert timing.best == min(timing.seconds)


def test_time_calls_without_warmup_records_every_call():
    log = []
    timings = time_calls({("model", "step"): logging_call(log, "x", 1)}, rounds=4, warmup=0)
    assert len(log) == 4 and timings["model", "step"].results == [1, 1, 1, 1]


def test_time_calls_pins_the_threads_and_autograd_and_restores_them():
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        log = []
        time_calls({"x": logging_call(log, "x")}, rounds=1)
        assert log[-1][1:] == (1, False)  # one thread, no autograd by default
        assert torch.get_num_threads() == 2 and torch.is_grad_enabled()
        time_calls({"x": logging_call(log, "x")}, rounds=1, threads=None, grad=True)
        assert log[-1][1:] == (2, True)
    finally:
        torch.set_num_threads(before)


def test_time_calls_restores_the_threads_when_a_call_raises():
    before = torch.get_num_threads()

    def fail():
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        time_calls({"fail": fail}, rounds=1, threads=1)
    assert torch.get_num_threads() == before


@pytest.mark.parametrize("rounds, warmup", [(0, 1), (2, -1)])
def test_time_calls_rejects_impossible_rounds(rounds, warmup):
    with pytest.raises(ValueError, match="rounds"):
        time_calls({"x": lambda: None}, rounds=rounds, warmup=warmup)


def test_timing_best_and_rate():
    timing = Timing(seconds=[0.5, 0.25, 1.25], results=[10, 20, 30])
    assert timing.best == 0.25
    assert timing.rate == pytest.approx(60 / 2.0)


def test_tokens_per_second_warms_up_then_runs_every_item_once_in_alternating_chunks():
    log = []

    def step_of(name):
        def step(item):
            log.append((name, item, torch.is_grad_enabled()))
            return item  # "tokens" = the item itself, so the rate's numerator is known
        return step

    contenders = {"slow": (step_of("slow"), list(range(10))), "fast": (step_of("fast"), [100, 200, 300, 400, 500])}
    speed = tokens_per_second(contenders, rounds=2, warmup=1)
    assert list(speed) == ["slow", "fast"] and all(rate > 0 for rate in speed.values())
    order = [(name, item) for name, item, _ in log]
    assert order == [("slow", 0), ("fast", 100),  # the warm-up round: the first item of each
                     *[("slow", i) for i in range(1, 5)], ("fast", 200), ("fast", 300),  # round 1
                     *[("slow", i) for i in range(5, 10)], ("fast", 400), ("fast", 500)]  # round 2
    assert all(grad for _, _, grad in log)  # training steps need autograd


def test_tokens_per_second_rate_counts_the_timed_tokens_only(monkeypatch):
    recorded = {}
    real_time_calls = time_calls

    def spy(calls, rounds, **kwargs):
        recorded.update(real_time_calls(calls, rounds, **kwargs))
        return recorded

    monkeypatch.setattr("course_utils.timing.time_calls", spy)
    speed = tokens_per_second({"only": (lambda item: item, [1000, 1, 2, 3])}, rounds=3, warmup=1)
    assert recorded["only"].results == [1, 2, 3]  # the warm-up item's 1000 tokens are not counted
    assert speed["only"] == pytest.approx(6 / sum(recorded["only"].seconds))


def test_tokens_per_second_needs_an_item_per_round():
    with pytest.raises(ValueError, match="too few"):
        tokens_per_second({"short": (lambda item: 1, [1, 2, 3])}, rounds=3, warmup=1)


@pytest.mark.parametrize("attention, parts", [("bahdanau", {"step", "attention"}),
                                              ("scaled_general", {"step", "attention"}), ("none", {"step"})])
def test_decoder_step_calls_run_one_step_and_the_attention_alone(attention, parts):
    model, batch = tiny_model(attention), tiny_batch()
    calls = decoder_step_calls(model, batch)
    assert set(calls) == parts
    with torch.no_grad():
        step = calls["step"]()
        assert step.log_probs.shape == (3, V_TGT)
        if "attention" in calls:
            weights = calls["attention"]().weights  # (B, S)
            assert weights.shape == batch.src.shape
            assert_close(weights.sum(-1), torch.ones(3))


@pytest.mark.parametrize("attention", ["bahdanau", "scaled_general"])
def test_forward_backward_is_the_model_loss_with_gradients_dropped(attention):
    model, batch = tiny_model(attention), tiny_batch()
    with torch.no_grad():
        expected = float(masked_nll_loss(model(batch.src, batch.src_lengths, batch.tgt).log_probs, batch.tgt))
    assert forward_backward(model, batch) == pytest.approx(expected, rel=1e-5)
    assert forward_backward(model, batch, model.decoder.decode_steps) == pytest.approx(expected, rel=1e-5)
    assert all(p.grad is None for p in model.parameters())  # every call does the same work


def test_forward_backward_computes_gradients():
    model, batch = tiny_model(), tiny_batch()
    seen = []
    for parameter in model.parameters():
        parameter.register_hook(lambda grad, seen=seen: seen.append(grad) or grad)
    forward_backward(model, batch)
    assert seen and any(float(g.abs().sum()) > 0 for g in seen)
