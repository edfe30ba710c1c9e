"""Training throughput: this engine vs the classic per-sentence recipe, side by side, in one run.

    python benchmarks/throughput.py            # ~2 minutes
    python benchmarks/throughput.py --quick    # ~30 seconds
    python benchmarks/throughput.py --device cuda --recipes lecture-bahdanau
    python benchmarks/throughput.py --quick --compare-plain        # + each decoder's plain forward, side by side
    python benchmarks/throughput.py --quick --compare-threads 1 2  # + the engine at 1 and 2 threads, side by side
    python benchmarks/throughput.py --quick --device cuda --compare-graphs  # + without CUDA graphs, side by side
    python benchmarks/throughput.py --recipes lecture-bahdanau --compare-turns  # + steps that take no CPU turns

Reports, for the classic recipe (course_utils/classic.py) and for each engine recipe, the training throughput in
target tokens per second (real tokens: padding is not counted), the speed-up over the classic recipe, and the
useful training FLOP/s: FLOPs per target token counted with torch.utils.flop_counter.FlopCounterMode on single,
unpadded pairs (forward + backward), times tokens per second, as a fraction of this machine's measured fp32
matmul peak. The classic recipe's thread count (1 or torch's default) is picked by a short trial first.

Side by side: each engine recipe is timed in rounds, and every round first trains the classic recipe for a chunk of
steps, then the engine (classic, engine, classic, engine, ...). A recipe's speed-up divides its tokens/s by the
classic recipe's tokens/s in the chunks interleaved with it, so a machine whose load changes during the run slows
both alike. The engine rows time `train.train_step` itself, the step that `train_epoch` runs (on a GPU with the CUDA
graphs that `train` records; the plain forward without them, its loss then over the padded (B, T, V) log-probabilities
as before the packed loss). `--compare-plain` and
`--compare-threads` and `--compare-turns` add variants of one model to each round, timed on the same batches.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import random
import sys
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import NamedTuple

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import count_flops, id_pairs, load_data, machine, matmul_peak, sync, table  # noqa: E402

from course_utils import classic  # noqa: E402
from course_utils.data import make_loader  # noqa: E402
from course_utils.fast import training_graphs  # noqa: E402
from course_utils.loss import masked_nll_loss  # noqa: E402
from course_utils.recipes import get_recipe  # noqa: E402
from course_utils.runtime import resolve_device  # noqa: E402
from course_utils.seq2seq import Seq2Seq, count_parameters  # noqa: E402
from course_utils.timing import thread_count  # noqa: E402
from course_utils.train import make_optimizer, train_step  # noqa: E402


class ClassicChunks:
    """The classic recipe trained a chunk of steps at a time (between the engine's rounds); tokens and seconds add up.

    One model and one stream of pairs (drawn with replacement, seeded) for the whole run, as in
    classic_run.train_classic."""

    def __init__(self, train_ids, src_size: int, tgt_size: int, threads: int, seed: int = 1):
        self.model = classic.make_classic(src_size, tgt_size, seed)
        self.optimizers = [torch.optim.SGD(part.parameters(), lr=classic.LEARNING_RATE) for part in self.model]
        self.train_ids, self.threads, self.draw = train_ids, threads, random.Random(seed)
        self.reset()

    def run(self, steps: int) -> None:
        """Train `steps` single-pair steps and add their target tokens and seconds to the totals."""
        with thread_count(self.threads):
            start = time.perf_counter()
            for _ in range(steps):
                src_ids, tgt_ids = self.draw.choice(self.train_ids)
                self.tokens += classic.train_step(self.model, self.optimizers, src_ids, tgt_ids)[1]
            self.seconds += time.perf_counter() - start

    def speed(self) -> float:
        return self.tokens / self.seconds

    def reset(self) -> None:
        """Start new totals (the model and the stream of pairs go on)."""
        self.tokens, self.seconds = 0, 0.0


def fastest_classic_threads(train_ids, src_size: int, tgt_size: int, steps: int) -> dict[int, float]:
    """{threads: classic tokens/s} for 1 thread and torch's default, `steps` steps each after a warm-up."""
    speeds = {}
    for threads in sorted({1, torch.get_num_threads()}):
        chunks = ClassicChunks(train_ids, src_size, tgt_size, threads)
        chunks.run(10)  # warm-up
        chunks.reset()
        chunks.run(steps)
        speeds[threads] = chunks.speed()
    return speeds


def classic_flops_per_token(train_ids, src_size, tgt_size, sample: int = 64) -> float:
    model = classic.make_classic(src_size, tgt_size)
    optimizers = [torch.optim.SGD(part.parameters(), lr=classic.LEARNING_RATE) for part in model]
    random.seed(0)
    flops, tokens = 0, 0
    for src_ids, tgt_ids in random.sample(train_ids, sample):
        steps_run: list[int] = []  # decoder steps: fewer than the target's tokens when free running stops at EOS

        def step(src_ids=src_ids, tgt_ids=tgt_ids, steps_run=steps_run):
            steps_run.append(classic.train_step(model, optimizers, src_ids, tgt_ids)[1])

        flops += count_flops(step)
        tokens += steps_run[0]
    return flops / tokens


def forward_backward(model, batch, teacher_forcing_ratio: float) -> None:
    """Forward and backward pass of the masked loss on one batch (what FLOPs are counted on)."""
    log_probs = model(batch.src, batch.src_lengths, batch.tgt, teacher_forcing_ratio).log_probs  # (B, T, V)
    masked_nll_loss(log_probs, batch.tgt).backward()


def engine_flops_per_token(model, data, teacher_forcing_ratio: float, sample: int = 64) -> float:
    """FLOPs per target token of forward + backward on `sample` single pairs (no padding at all)."""
    loader = make_loader(random.Random(0).sample(data.splits.train, sample), data.src_vocab, data.tgt_vocab,
                         batch_size=1, shuffle=False, bucket_by=None)
    device = model.device
    flops, tokens = 0, 0
    for batch in loader:
        batch = batch.to(device)

        flops += count_flops(partial(forward_backward, model, batch, teacher_forcing_ratio))
        tokens += int(batch.tgt_lengths.sum())
    model.zero_grad(set_to_none=True)
    return flops / tokens


class Variant(NamedTuple):
    """How one engine measurement differs from the recipe as it is."""

    threads: int | None = None  # torch.set_num_threads for the measurement (None: leave it)
    plain: bool = False  # run the decoder's own forward instead of its fast path (train_step's fast_paths=False)
    graphs: bool = True  # on a GPU, replay the CUDA graphs that `train` records (the plain forward never does)
    turns: bool = True  # each CPU step takes its turn (runtime.cpu_turn), as the course does; False: as at b72084c

    def label(self) -> str:
        return (f", {self.threads} thread{'s' if self.threads > 1 else ''}" if self.threads else "") + (
            ", plain forward" if self.plain else "") + ("" if self.graphs else ", no CUDA graphs") + (
            "" if self.turns else ", no CPU turns")


@contextlib.contextmanager
def applied(variant: Variant):
    """Inside the block torch runs with the variant's thread count and turns; restored after."""
    before = os.environ.get("COURSE_CPU_TURNS")
    os.environ["COURSE_CPU_TURNS"] = "1" if variant.turns else "0"  # the switch runtime.cpu_turn reads
    try:
        with thread_count(variant.threads):
            yield
    finally:
        if before is None:
            del os.environ["COURSE_CPU_TURNS"]
        else:
            os.environ["COURSE_CPU_TURNS"] = before


def engine_throughput(recipe, data, seconds: float, device, batch_size: int | None,
                      variants: Sequence[Variant] = (Variant(),), rounds: int = 3,
                      before_round: Callable[[], None] = lambda: None) -> tuple[dict, Seq2Seq, int]:
    """({variant: target tokens/s}, model, batch size) of training's own `train_step` on the recipe's model and
    settings, timed in `rounds` rounds. Each round first calls `before_round()` (the classic recipe's chunk), then
    times the variants one after the other on the same batches (the first variant's seconds / rounds worth)."""
    config = recipe.train_config(device=str(device), **({"batch_size": batch_size} if batch_size else {}))
    torch.manual_seed(config.seed)
    model = Seq2Seq(recipe.model_config(data.src_vocab, data.tgt_vocab)).to(device).train()
    optimizer = make_optimizer(model, config)
    loader = make_loader(data.splits.train, data.src_vocab, data.tgt_vocab, config.batch_size,
                         bucket_by=config.bucket_by, seed=config.seed)

    def batches():
        while True:
            yield from loader

    graphs = training_graphs(model, config, loader)  # as `train` does (on a GPU), recorded before the timing

    def one_step(batch, variant: Variant) -> int:  # the very step that train_epoch runs (smoothing, clipping too)
        step_graphs = graphs if variant.graphs and not variant.plain else None
        return train_step(model, batch.to(device), optimizer, config, step_graphs, not variant.plain).tokens

    stream = batches()
    tokens, elapsed = dict.fromkeys(variants, 0), dict.fromkeys(variants, 0.0)
    for _ in range(rounds):
        before_round()
        timed = []  # the first variant trains for seconds / rounds; the others then train on the very same batches
        for variant in variants:
            with applied(variant):
                for _ in range(2):  # warm-up (and a settle after switching)
                    one_step(next(stream), variant)
                sync(device)
                start = time.perf_counter()
                if not timed:
                    while time.perf_counter() - start < seconds / rounds:  # the loader's collation is in the time
                        timed.append(next(stream))
                        tokens[variant] += one_step(timed[-1], variant)
                else:
                    tokens[variant] += sum(one_step(batch, variant) for batch in timed)
                sync(device)
                elapsed[variant] += time.perf_counter() - start
    return {variant: tokens[variant] / elapsed[variant] for variant in variants}, model, config.batch_size


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="shorter measurements (~30 s in all)")
    parser.add_argument("--recipes", nargs="+", default=["lecture-bahdanau", "lecture-scaled_general", "full-bahdanau"])
    parser.add_argument("--batch-size", type=int, default=None, help="override the recipes' batch size")
    parser.add_argument("--classic-steps", type=int, default=None,
                        help="classic steps per engine recipe, split over the rounds (default 600; --quick 150)")
    parser.add_argument("--seconds", type=float, default=None,
                        help="engine seconds per recipe and variant, split over the rounds (default 15; --quick 6)")
    parser.add_argument("--device", default="cpu", help="cpu, cuda or auto (the classic recipe always runs on CPU)")
    parser.add_argument("--threads", type=int, default=None, help="torch.set_num_threads (default: torch's)")
    parser.add_argument("--compare-plain", action="store_true",
                        help="also time each recipe with its decoder's plain forward (no fast path), side by side")
    parser.add_argument("--compare-threads", type=int, nargs="+", default=None, metavar="N",
                        help="time each engine recipe at these thread counts, side by side (e.g. 1 2)")
    parser.add_argument("--compare-graphs", action="store_true",
                        help="on a GPU, also time each recipe without the CUDA graphs, side by side")
    parser.add_argument("--compare-turns", action="store_true",
                        help="also time each recipe with steps that take no CPU turns (as at b72084c), side by side")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds (classic, engine variants, ...)")
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    steps = args.classic_steps or (150 if args.quick else 600)
    seconds = args.seconds or (6.0 if args.quick else 15.0)
    device = resolve_device(args.device)

    print(f"machine: {machine()}")
    data = load_data()
    train_ids = id_pairs(data.splits.train, data.src_vocab, data.tgt_vocab)
    sizes = len(data.src_vocab), len(data.tgt_vocab)
    peak_cpu = matmul_peak("cpu", seconds=1.0 if args.quick else 3.0)
    peak = peak_cpu if device.type == "cpu" else matmul_peak(str(device), size=8192, seconds=2.0)
    print(f"measured fp32 matmul peak on {device.type}: {peak / 1e9:.1f} GFLOP/s")

    trial = fastest_classic_threads(train_ids, *sizes, steps=max(20, steps // 5))
    classic_threads = max(trial, key=trial.get)
    print("classic tokens/s by thread count (short trial): " + ", ".join(f"{t}: {v:.0f}" for t, v in trial.items()))
    classic_flops = classic_flops_per_token(train_ids, *sizes, sample=16 if args.quick else 64)
    classic_params = sum(count_parameters(part) for part in classic.make_classic(*sizes))
    chunks = ClassicChunks(train_ids, *sizes, threads=classic_threads)
    chunks.run(10)  # warm-up
    thread_counts = args.compare_threads or [None]
    variants = [Variant(threads, plain) for plain in ([False, True] if args.compare_plain else [False])
                for threads in thread_counts] + ([Variant(graphs=False)] if args.compare_graphs else []) + (
        [Variant(turns=False)] if args.compare_turns else [])
    rows, classic_tokens, classic_seconds = [], 0, 0.0
    for name in args.recipes:
        recipe = get_recipe(name)
        chunks.reset()  # this recipe's ratio uses the classic chunks of its own rounds
        classic_round = partial(chunks.run, steps // args.rounds)
        speeds, model, batch_size = engine_throughput(recipe, data, seconds, device, args.batch_size, variants,
                                                      args.rounds, before_round=classic_round)
        classic_speed = chunks.speed()
        classic_tokens, classic_seconds = classic_tokens + chunks.tokens, classic_seconds + chunks.seconds
        flops = engine_flops_per_token(model, data, recipe.train.teacher_forcing_ratio, sample=16 if args.quick else 64)
        for variant, speed in speeds.items():
            rows.append([name + variant.label(), f"{count_parameters(model):,}", str(batch_size), device.type,
                         f"{speed:,.0f}", f"{classic_speed:,.0f}", f"{speed / classic_speed:.1f}x",
                         f"{flops / 1e6:.1f}", f"{speed * flops / 1e9:.2f}", f"{speed * flops / peak:.1%}"])
            print(f"  measured {name}{variant.label()}: {speed:,.0f} tokens/s; classic in the same rounds: "
                  f"{classic_speed:,.0f} tokens/s", flush=True)
    classic_speed = classic_tokens / classic_seconds
    rows.insert(0, ["classic (1 pair/step, SGD)", f"{classic_params:,}", "1", "cpu", f"{classic_speed:,.0f}",
                    f"{classic_speed:,.0f}", "1.0x", f"{classic_flops / 1e6:.1f}",
                    f"{classic_speed * classic_flops / 1e9:.2f}", f"{classic_speed * classic_flops / peak_cpu:.1%}"])
    print()
    print(table(rows, ["recipe", "params", "batch", "device", "tgt tokens/s", "classic alongside", "speed-up",
                       "MFLOP/token", "useful GFLOP/s", "of peak"]))
    print(f"\n(side by side: per recipe {args.rounds} rounds of [classic {steps // args.rounds} steps with "
          f"{classic_threads} thread(s), then the engine for {seconds / args.rounds:.1f} s per variant]; the classic "
          "row is all its chunks together; batch collation included; FLOPs counted with FlopCounterMode on unpadded "
          "single pairs (the plain forward's FLOPs are the fast path's)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
