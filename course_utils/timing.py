"""Measuring speed side by side: calls timed in turns, the cost of one decoder step, training throughput.

Each round calls every contender once, so a busy moment slows all alike; times are wall-clock seconds on one CPU
thread unless asked otherwise (a CUDA callable must synchronise itself). Introduced in notebooks 02, 04 and 05.
"""
from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, TypeVar

import torch

from course_utils.data import Batch
from course_utils.loss import masked_nll_loss
from course_utils.seq2seq import Seq2Seq, teacher_forced_input
from course_utils.vocab import SOS_ID

__all__ = ["Timing", "thread_count", "time_calls", "decoder_step_calls", "forward_backward", "tokens_per_second"]

_Key = TypeVar("_Key", bound=Hashable)
_Item = TypeVar("_Item")


@dataclass
class Timing:
    """A contender's timed rounds (no warm-up): round i's seconds and return value. Introduced in notebook 02."""
    seconds: list[float] = field(default_factory=list)
    results: list[Any] = field(default_factory=list)

    @property
    def best(self) -> float:
        """The fastest round, in seconds."""
        return min(self.seconds)

    @property
    def rate(self) -> float:
        """Sum of results / sum of seconds: tokens per second when each call returns its token count."""
        return sum(self.results) / sum(self.seconds)


@contextlib.contextmanager
def thread_count(threads: int | None) -> Iterator[None]:
    """torch uses `threads` CPU threads inside the block (None: as it is); the previous count is restored after."""
    previous = torch.get_num_threads()
    if threads:
        torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


def time_calls(calls: Mapping[_Key, Callable[[], Any]], rounds: int, warmup: int = 1, threads: int | None = 1,
               grad: bool = False) -> dict[_Key, Timing]:
    """Time the no-argument calls in turns: `warmup` untimed rounds, then `rounds` timed ones; `threads`: torch's CPU
    threads meanwhile (None: as it is); `grad`: autograd on. Returns {key: Timing}. Introduced in appendix A2."""
    if rounds < 1 or warmup < 0:
        raise ValueError(f"time_calls needs rounds >= 1 and warmup >= 0, got rounds={rounds}, warmup={warmup}")
    timings = {key: Timing() for key in calls}
    with thread_count(threads), torch.set_grad_enabled(grad):
        for round_index in range(warmup + rounds):
            for key, call in calls.items():
                started = time.perf_counter()
                result = call()
                if round_index >= warmup:
                    timings[key].seconds.append(time.perf_counter() - started)
                    timings[key].results.append(result)
    return timings


def decoder_step_calls(model: Seq2Seq, batch: Batch) -> dict[str, Callable[[], Any]]:
    """{"step": one decoder step from <sos> (prev (B,) -> log-probs (B, V)), "attention": the attention module alone
    (weights (B, S)) where the decoder has one}, for `time_calls`; encodes once. Introduced in appendix A2."""
    with torch.no_grad():
        memory, state = model.encode(batch.src, batch.src_lengths)  # keys (B, S, K), hidden (B, H)
    prev = torch.full((batch.src.shape[0],), SOS_ID, device=batch.src.device)  # (B,)
    calls = {"step": partial(model.decoder.step, prev, state, memory)}
    if hasattr(model.decoder, "attention"):
        calls["attention"] = partial(model.decoder.attention, state.hidden, memory.keys, memory.mask,
                                     memory.projected_keys)
    return calls


def forward_backward(model: Seq2Seq, batch: Batch, decode: Callable | None = None) -> float:
    """One teacher-forced training pass without the optimiser (masked NLL, backward, gradients then set to None);
    returns the loss. decode(tgt_in (B, T), state, memory) -> DecoderOutput, default model.decoder (e.g.
    model.decoder.decode_steps, or a fast.recurrences.FastDecoder). Introduced in appendix A2."""
    memory, state = model.encode(batch.src, batch.src_lengths)  # keys (B, S, K)
    tgt_in = teacher_forced_input(batch.tgt)  # (B, T): <sos>, then the gold words shifted right
    log_probs = (decode or model.decoder)(tgt_in, state, memory).log_probs  # (B, T, V)
    loss = masked_nll_loss(log_probs, batch.tgt)
    loss.backward()
    model.zero_grad(set_to_none=True)
    return loss.item()


def tokens_per_second(contenders: Mapping[_Key, tuple[Callable[[_Item], int], Sequence[_Item]]], rounds: int = 3,
                      warmup: int = 2, threads: int | None = 1) -> dict[_Key, float]:
    """{key: target tokens per second} of (step, items) contenders trained side by side; step(item) trains on one
    item and returns its target tokens. The first `warmup` items are an untimed round; the rest are split into
    `rounds` chunks, round r runs each contender's chunk r (`time_calls`, autograd on). Introduced in appendix A2."""
    calls = {}
    for key, (step, items) in contenders.items():
        if len(items) < warmup + rounds:
            raise ValueError(f"{key!r} has {len(items)} items: too few for {warmup} warm-up items and {rounds} rounds")
        head, rest = ([items[:warmup]] if warmup else []), items[warmup:]  # then `rounds` chunks, sizes within one
        chunks = iter(head + [rest[i * len(rest) // rounds:(i + 1) * len(rest) // rounds] for i in range(rounds)])
        calls[key] = lambda step=step, chunks=chunks: sum(step(item) for item in next(chunks))
    timings = time_calls(calls, rounds, warmup=1 if warmup else 0, threads=threads, grad=True)
    return {key: timing.rate for key, timing in timings.items()}
