"""Notebook 00's opening over seeds: the toy copying task, with and without attention.

    python benchmarks/bottleneck_toy.py                   # seeds 0-7, 4 runs at once (one thread each)
    python benchmarks/bottleneck_toy.py --seeds 0 1 --workers 1 --output /tmp/toy.json

Each seed trains the two models of `course_utils.overview.train_and_score_toy` ("none" and "bahdanau", the notebook's
settings) and records their accuracy per sequence length; the runs are written to --output (default
benchmarks/results/bottleneck_toy.json), with the command that made them. Property
"00.attention_holds_with_length" (course_utils.claims) is judged on every run.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import machine, run_jobs  # noqa: E402

from course_utils.claims import PROPERTIES
from course_utils.overview import train_and_score_toy

RESULTS = Path(__file__).resolve().parent / "results" / "bottleneck_toy.json"
PROPERTY = "00.attention_holds_with_length"


def run_one(seed: int) -> dict:
    """Both models of one seed -> {"seed", "lengths", "none", "bahdanau", "train_seconds"}."""
    torch.set_num_threads(1)
    scores = {kind: train_and_score_toy(kind, seed=seed) for kind in ("none", "bahdanau")}
    return {"seed": seed, "lengths": scores["none"].lengths,
            **{kind: [round(a, 4) for a in score.accuracy] for kind, score in scores.items()},
            "train_seconds": {kind: round(score.seconds, 1) for kind, score in scores.items()}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=list(range(8)))
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args()
    start, runs = time.perf_counter(), []

    def keep(run: dict) -> None:
        held = PROPERTIES[PROPERTY].holds(run)
        print(f"seed {run['seed']}: none {run['none']}  bahdanau {run['bahdanau']}  {PROPERTY}: "
              f"{'holds' if held else 'DOES NOT HOLD'}", flush=True)
        runs.append(run)

    run_jobs(run_one, args.seeds, args.workers, keep)
    runs.sort(key=lambda run: run["seed"])
    command = f"python benchmarks/bottleneck_toy.py --seeds {' '.join(map(str, args.seeds))} --workers {args.workers}"
    results = {"command": command + ("" if args.output == RESULTS else f" --output {args.output}"),
               "machine": machine() + ", one thread per run", "settings": "train_and_score_toy's defaults",
               "wall_seconds": round(time.perf_counter() - start, 1), "runs": runs}
    args.output.write_text(json.dumps(results, indent=1) + "\n")
    held = sum(PROPERTIES[PROPERTY].holds(run) for run in runs)
    print(f"{PROPERTY} held in {held} of {len(runs)} runs; written to {args.output}")


if __name__ == "__main__":
    main()
