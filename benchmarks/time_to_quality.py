"""Time to quality: test BLEU reached by the classic recipe and by this engine's recipes, in one run.

    python benchmarks/time_to_quality.py                  # classic 25,000 steps (~12 min) + lecture + full (~10 min)
    python benchmarks/time_to_quality.py --skip-full      # classic + lecture only
    python benchmarks/time_to_quality.py --quick          # 1,500 classic steps, 20 s lecture, 40 s full: a smoke run
    python benchmarks/time_to_quality.py --reuse-classic  # reuse the classic result cached by an earlier run
    python benchmarks/time_to_quality.py --skip-classic   # the recipes only: their BLEU, times and curves

Everything trains on the same split (data.load_course_data(), seed 0) and is scored on the same test sentences with
the same sacreBLEU settings (metrics.corpus_scores). Training time excludes the per-epoch dev evaluation.
Targets: the default lecture recipe beats the classic recipe's test BLEU in under 2 minutes of training and the full
recipe at least doubles it in under 10 minutes; test BLEU 50 or more for the lecture recipe (greedy) and 66
or more for the full recipe (beam 5) in the same times. For each recipe it also prints its curve of
quality against time: greedy dev BLEU after every epoch against the training seconds so far.
"""
from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from classic_run import STEPS, classic_translate, train_classic  # noqa: E402
from common import id_pairs, load_data, machine, table  # noqa: E402

from course_utils.corpus import data_dir  # noqa: E402
from course_utils.evaluate import evaluate  # noqa: E402
from course_utils.metrics import corpus_scores  # noqa: E402
from course_utils.recipes import DEFAULT_RECIPE, get_recipe  # noqa: E402
from course_utils.timing import thread_count  # noqa: E402
from course_utils.zoo import train_recipe  # noqa: E402


def run_classic(data, steps: int, seed: int) -> dict:
    """The classic recipe, on one thread (its fastest setting: its matrices are too small to share)."""
    train_ids = id_pairs(data.splits.train, data.src_vocab, data.tgt_vocab)
    with thread_count(1):
        run = train_classic(train_ids, len(data.src_vocab), len(data.tgt_vocab), steps=steps, seed=seed)
    hypotheses = [" ".join(data.tgt_vocab.decode(classic_translate(run.model, data.src_vocab.encode(p.source))))
                  for p in data.splits.test]
    scores = corpus_scores(hypotheses, [pair.target for pair in data.splits.test])
    return {"name": f"classic ({steps:,} single-pair SGD steps)", "seconds": run.seconds, "bleu": scores.bleu,
            "chrf": scores.chrf, "signature": scores.signature, "threads": 1}


def run_recipe(data, name: str, time_budget: float | None, device: str = "cpu") -> dict:
    recipe = get_recipe(name)
    overrides = {"device": device}
    if time_budget is not None:
        overrides["time_budget"] = time_budget
    started = time.perf_counter()
    trained = train_recipe(recipe, data, progress=False, **overrides)
    wall = time.perf_counter() - started
    result = evaluate(trained.model, data.splits.test, data.src_vocab, data.tgt_vocab, beam_width=recipe.beam_width)
    decoding = "greedy" if recipe.beam_width == 1 else f"beam {recipe.beam_width}"
    history = trained.history
    elapsed = itertools.accumulate(history.epoch_seconds)  # training seconds after each epoch
    return {"name": f"{name} ({decoding})", "device": trained.model.device.type,
            "seconds": history.train_seconds, "wall": wall, "bleu": result.bleu, "chrf": result.chrf,
            "signature": result.signature, "epochs": history.epochs,
            "curve": list(zip(elapsed, history.dev_bleu))}  # (training seconds so far, greedy dev BLEU) per epoch


def versus_classic(bleu: float, classic_bleu: float | None) -> str:
    """The BLEU ratio to the classic recipe as the table prints it; "-" without a baseline or against 0 BLEU."""
    return f"{bleu / classic_bleu:.2f}x" if classic_bleu else "-"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="a short smoke run (numbers are not the targets')")
    parser.add_argument("--classic-steps", type=int, default=None, help=f"default {STEPS:,}")
    parser.add_argument("--reuse-classic", action="store_true", help="reuse a cached classic result of these steps")
    parser.add_argument("--skip-classic", action="store_true", help="train the recipes only (no classic baseline)")
    parser.add_argument("--lecture", default=DEFAULT_RECIPE, help="the lecture recipe to time")
    parser.add_argument("--full", default="full-bahdanau", help="the full recipe to time")
    parser.add_argument("--skip-full", action="store_true", help="skip the ~10 minute full recipe")
    parser.add_argument("--threads", type=int, default=None, help="torch.set_num_threads (default: torch's)")
    parser.add_argument("--device", default="cpu", help="where the recipes train: cpu, cuda or auto (classic: CPU)")
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    steps = args.classic_steps or (1500 if args.quick else STEPS)
    print(f"machine: {machine()}")
    data = load_data()

    baseline = None
    cache = data_dir() / "benchmarks" / f"classic-{steps}-seed0.json"
    if args.skip_classic:
        print("classic recipe skipped (--skip-classic): no 'vs classic' column")
    elif args.reuse_classic and cache.exists():
        baseline = json.loads(cache.read_text())
        print(f"classic result reused from {cache}")
    else:
        print(f"training the classic recipe for {steps:,} steps...", flush=True)
        baseline = run_classic(data, steps, seed=0)
        cache.parent.mkdir(parents=True, exist_ok=True)
        cache.write_text(json.dumps(baseline, indent=1))
    results, verdicts = [], []
    if baseline:
        results.append(baseline)
        verdicts.append("(baseline)")
        print(f"  classic: test BLEU {baseline['bleu']:.2f} after {baseline['seconds']:.0f} s", flush=True)

    # (recipe, time budget, time limit s, BLEU factor over classic, test BLEU goal)
    runs = [(args.lecture, 20.0 if args.quick else None, 120.0, 1.0, 50.0)]
    if not args.skip_full:
        runs.append((args.full, 40.0 if args.quick else None, 600.0, 2.0, 66.0))
    for name, budget, limit, factor, goal in runs:
        print(f"training {name}...", flush=True)
        result = run_recipe(data, name, budget, args.device)
        results.append(result)
        fast = result["seconds"] < limit
        reached = fast and result["bleu"] >= goal
        verdict = f"{'met' if reached else 'MISSED'}: >= {goal:g} BLEU in < {limit / 60:.0f} min"
        if baseline:
            beaten = fast and result["bleu"] > factor * baseline["bleu"]
            verdict += f"; {'met' if beaten else 'MISSED'}: > {factor:g}x classic"
        verdicts.append("n/a with --quick" if args.quick else verdict)
        print(f"  {name}: test BLEU {result['bleu']:.2f} after {result['seconds']:.0f} s", flush=True)
        print("  quality against time (training s: greedy dev BLEU after each epoch): "
              + ", ".join(f"{seconds:.0f}: {bleu:.1f}" for seconds, bleu in result["curve"]), flush=True)

    rows = [[r["name"], r.get("device", "cpu"), f"{r['seconds']:.0f}", f"{r['bleu']:.2f}", f"{r['chrf']:.2f}",
             versus_classic(r["bleu"], baseline and baseline["bleu"]), verdict]
            for r, verdict in zip(results, verdicts)]
    print()
    print(table(rows, ["recipe", "device", "train s", "test BLEU", "test chrF", "vs classic", "targets"]))
    print(f"\nsacreBLEU: {results[0]['signature']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
