"""Measuring speed: calls timed side by side, the cost of one decoder step, training throughput.

    timings = time_calls({"loop": loop, "one call": one_call}, rounds=10)  # round robin, one CPU thread
    timings["loop"].best                                # the fastest round, in seconds
    calls = decoder_step_calls(model, batch)            # {"step": ..., "attention": ...}, ready to time
    time_calls({"fwd+bwd": partial(forward_backward, model, batch)}, rounds=5, grad=True)
    tokens_per_second({"classic": (step, pairs), "batched": (step, batches)}, rounds=3)

Every measurement takes turns: each round calls every contender once, one after the other, so a busy moment of a
shared machine slows them all alike, and the fastest round is the one least disturbed. Times are wall-clock seconds
(time.perf_counter) on one CPU thread unless asked otherwise; a CUDA callable must synchronise itself to be timed.

Introduced in notebook 02 (`time_calls`); the decoder and training measurements in notebooks 04 and 05.
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

__all__ = ["Key", "Item", "Timing", "thread_count", "time_calls", "decoder_step_calls", "forward_backward",
           "tokens_per_second"]

Key = TypeVar("Key", bound=Hashable)
Item = TypeVar("Item")


@dataclass
class Timing:
    """One contender's timed rounds: `seconds[i]` is round i's wall-clock time and `results[i]` what the call
    returned in that round (warm-up rounds are not recorded). Introduced in notebook 02."""

    seconds: list[float] = field(default_factory=list)
    results: list[Any] = field(default_factory=list)

    @property
    def best(self) -> float:
        """The fastest round, in seconds: the one least disturbed by anything else running."""
        return min(self.seconds)

    @property
    def rate(self) -> float:
        """The sum of the results over the sum of the seconds: tokens per second when every call returns the number
        of tokens it processed."""
        return sum(self.results) / sum(self.seconds)


@contextlib.contextmanager
def thread_count(threads: int | None) -> Iterator[None]:
    """Inside the block torch uses `threads` CPU threads (None: leave the count as it is); the previous count is
    restored after, also when the block raises."""
    previous = torch.get_num_threads()
    if threads:
        torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


def time_calls(calls: Mapping[Key, Callable[[], Any]], rounds: int, warmup: int = 1, threads: int | None = 1,
               grad: bool = False) -> dict[Key, Timing]:
    """Time every call of `calls` side by side: `warmup` untimed rounds, then `rounds` timed ones; each round calls
    every contender once, in the mapping's order (round robin).

    Args:
        calls: {key: a callable taking no arguments}; keys may be anything hashable (names, (model, part) tuples).
        rounds: timed rounds (at least 1).
        warmup: untimed rounds first (caches, lazy initialisation, the allocator's first requests).
        threads: torch's CPU threads during the measurement, the previous count restored after (None: as it is).
            One thread, the default: steady numbers on a busy machine, and no thread start-up cost per small call.
        grad: autograd on (training passes) or off (inference, the default).
    Returns:
        {key: Timing}, in the order of `calls`: `rounds` seconds and return values each; `.best` is the fastest
        round, `.rate` the results' sum per second.

    Introduced in notebook 02.
    """
    if rounds < 1 or warmup < 0:
        raise ValueError(f"time_calls needs rounds >= 1 and warmup >= 0, got rounds={rounds}, warmup={warmup}")
    timings = {key: Timing() for key in calls}
    with thread_count(threads), torch.set_grad_enabled(grad):
        for round_index in range(warmup + rounds):
            for key, call in calls.items():
                started = time.perf_counter()
                result = call()
                elapsed = time.perf_counter() - started
                if round_index >= warmup:
                    timings[key].seconds.append(elapsed)
                    timings[key].results.append(result)
    return timings


def decoder_step_calls(model: Seq2Seq, batch: Batch) -> dict[str, Callable[[], Any]]:
    """The two calls whose cost per decoding step notebook 04 compares, ready for `time_calls`.

    The batch is encoded here, once, without gradients: memory keys (B, S, K), mask (B, S), the initial state.
    "step" is one `model.decoder.step` from <sos> for every sentence (embedding, attention, GRU, output layer:
    prev (B,) -> log-probs (B, V)); "attention", only for decoders with an `attention` module, is that module alone
    on the initial hidden state (B, H) and the memory (weights (B, S)).

    Introduced in notebook 04.
    """
    with torch.no_grad():
        memory, state = model.encode(batch.src, batch.src_lengths)  # keys (B, S, K), hidden (B, H)
    prev = torch.full((batch.src.shape[0],), SOS_ID, device=batch.src.device)  # (B,)
    calls = {"step": partial(model.decoder.step, prev, state, memory)}
    if hasattr(model.decoder, "attention"):
        calls["attention"] = partial(model.decoder.attention, state.hidden, memory.keys, memory.mask,
                                     memory.projected_keys)
    return calls


def forward_backward(model: Seq2Seq, batch: Batch, decode: Callable | None = None) -> float:
    """One training pass without the optimiser: encode, decode the gold target teacher forced, masked NLL per target
    token, backward; then the gradients are dropped (set to None), so that every call does the same work.

    Args:
        model: a Seq2Seq, on the device of `batch`.
        batch: Batch with src (B, S), src_lengths (B,), tgt (B, T).
        decode: called as decode(tgt_in (B, T), state, memory) and returning a DecoderOutput, e.g.
            model.decoder.decode_steps or course_utils.fast.recurrences.FastDecoder(model.decoder) (the fused
            recurrence); default: model.decoder (its forward, the teacher-forced step loop).
    Returns:
        The loss, a float.

    Introduced in notebook 04.
    """
    memory, state = model.encode(batch.src, batch.src_lengths)  # keys (B, S, K)
    tgt_in = teacher_forced_input(batch.tgt)  # (B, T): <sos>, then the gold words shifted right
    log_probs = (decode or model.decoder)(tgt_in, state, memory).log_probs  # (B, T, V)
    loss = masked_nll_loss(log_probs, batch.tgt)
    loss.backward()
    model.zero_grad(set_to_none=True)
    return loss.item()


def _chunks(items: Sequence[Item], warmup: int, rounds: int) -> list[Sequence[Item]]:
    """items[:warmup] (when warmup > 0), then the rest in `rounds` consecutive chunks of sizes within one."""
    head, rest = ([items[:warmup]] if warmup else []), items[warmup:]
    return head + [rest[i * len(rest) // rounds:(i + 1) * len(rest) // rounds] for i in range(rounds)]


def tokens_per_second(contenders: Mapping[Key, tuple[Callable[[Item], int], Sequence[Item]]], rounds: int = 3,
                      warmup: int = 2, threads: int | None = 1) -> dict[Key, float]:
    """Training throughput of several contenders, measured side by side.

    Each contender is (step, items): `step(item)` trains on one item (a pair, a batch) and returns the number of
    target tokens it read. Its first `warmup` items are a warm-up round (untimed); the rest are split into `rounds`
    consecutive chunks, and round r runs every contender's chunk r in turn (`time_calls`, autograd on).
    `threads`: torch's CPU threads during the measurement, as in `time_calls` (default one).

    Returns:
        {key: target tokens per second over the timed chunks}, in the order of `contenders`.

    Introduced in notebook 05.
    """
    calls = {}
    for key, (step, items) in contenders.items():
        if len(items) < warmup + rounds:
            raise ValueError(f"{key!r} has {len(items)} items: too few for {warmup} warm-up items and {rounds} rounds")
        chunks = iter(_chunks(items, warmup, rounds))
        calls[key] = lambda step=step, chunks=chunks: sum(step(item) for item in next(chunks))
    timings = time_calls(calls, rounds, warmup=1 if warmup else 0, threads=threads, grad=True)
    return {key: timing.rate for key, timing in timings.items()}
