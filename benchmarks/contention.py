"""Two trainings on one machine: the lecture recipe's training step alone and with a second training beside it,
under the settings of b72084c and under others, side by side in one run.

    python benchmarks/contention.py                    # about 8 minutes on 2 cores
    python benchmarks/contention.py --seconds 10 --rounds 2 --threads 2

Each training runs in its own process, since OpenMP reads its settings once, when torch loads it. "today" is
b72084c: OpenMP's default wait (idle threads spin a while before they sleep), every process on its own; "turns" is
the course's policy: the same wait, and CPU training steps take turns (`runtime.cpu_turn`); "passive" sets
OMP_WAIT_POLICY=PASSIVE (idle threads sleep at once) without turns; each --variant sets its own variables
(GOMP_SPINCOUNT=N: spin N rounds, then sleep; COURSE_CPU_TURNS=0: no turns). A round times, for each setting, one
training alone, then two at once (each process reports its own steps per second); rounds alternate the order so
that a change in the machine's load affects all alike. The table gives the median over rounds and each pair's
slowdown against the lone training of its own setting; the last lines compare each lone speed with today's.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
POLICIES = {"today": {"COURSE_CPU_TURNS": "0"}, "turns": {},
            "passive": {"OMP_WAIT_POLICY": "PASSIVE", "COURSE_CPU_TURNS": "0"}}
_OPENMP_VARIABLES = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "KMP_BLOCKTIME", "COURSE_CPU_TURNS")


def worker(policy: str, seconds: float, threads: int, start_at: float) -> None:
    """Train lecture-bahdanau on the course data for `seconds` and print {"steps_per_s": ...} as JSON."""
    import torch

    from course_utils.data import load_course_data, make_loader
    from course_utils.recipes import get_recipe
    from course_utils.runtime import wait_policy
    from course_utils.train import make_optimizer, train_step
    from course_utils.zoo import build_model

    torch.set_num_threads(threads)
    data = load_course_data(log=None)
    recipe = get_recipe("lecture-bahdanau")
    config = recipe.train_config()
    torch.manual_seed(0)
    model = build_model(recipe.model_config(data.src_vocab, data.tgt_vocab)).train()
    optimizer = make_optimizer(model, config)
    batches = list(make_loader(data.splits.train, data.src_vocab, data.tgt_vocab, config.batch_size, seed=0))
    for batch in batches[:3]:  # warm-up
        train_step(model, batch, optimizer, config)
    while time.time() < start_at:  # both processes of a pair start together
        time.sleep(0.01)
    steps, started = 0, time.perf_counter()
    while time.perf_counter() - started < seconds:
        train_step(model, batches[steps % len(batches)], optimizer, config)
        steps += 1
    print(json.dumps({"policy": policy, "steps_per_s": steps / (time.perf_counter() - started),
                      "wait_policy": wait_policy()}))


def run(policy: str, copies: int, seconds: float, threads: int, variables: dict[str, str]) -> list[float]:
    """Start `copies` workers that train at the same moment; their steps per second."""
    env = {key: value for key, value in os.environ.items() if key not in _OPENMP_VARIABLES}
    env.update(variables)
    start_at = time.time() + 18.0 if copies > 1 else 0.0  # a pair: time for both to load the data and warm up
    command = [sys.executable, __file__, "--worker", policy, "--seconds", str(seconds), "--threads", str(threads),
               "--start-at", str(start_at)]
    processes = [subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True)
                 for _ in range(copies)]
    results = [json.loads(process.communicate()[0].strip().splitlines()[-1]) for process in processes]
    return [result["steps_per_s"] for result in results]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=20.0, help="timed training per run (default 20)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of all four runs (default 3)")
    parser.add_argument("--threads", type=int, default=2, help="torch threads per training (default 2)")
    parser.add_argument("--output", type=Path, help="also write the results as JSON here")
    parser.add_argument("--alone-only", action="store_true",
                        help="time each setting alone only (more rounds in the same time: the lone speeds' noise)")
    parser.add_argument("--variant", action="append", default=[], metavar="NAME:VAR=VALUE[,VAR=VALUE]",
                        help="another setting to compare, e.g. spin:GOMP_SPINCOUNT=20000 (torch imported first)")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--start-at", type=float, default=0.0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.seconds, args.threads, args.start_at)
        return
    settings = dict(POLICIES)
    for variant in args.variant:
        name, _, assignments = variant.partition(":")
        settings[name] = dict(item.split("=", 1) for item in assignments.split(","))
    policies = list(settings)
    alone: dict[str, list[float]] = {policy: [] for policy in policies}
    pair: dict[str, list[float]] = {policy: [] for policy in policies}
    for round_ in range(args.rounds):
        for policy in policies if round_ % 2 == 0 else policies[::-1]:
            alone[policy] += run(policy, 1, args.seconds, args.threads, settings[policy])
            if not args.alone_only:
                pair[policy] += run(policy, 2, args.seconds, args.threads, settings[policy])
            print(f"round {round_ + 1} {policy}: alone {alone[policy][-1]:.2f} steps/s"
                  + ("" if args.alone_only else f", pair {pair[policy][-2]:.2f} and {pair[policy][-1]:.2f}"),
                  flush=True)
    rows = {policy: {"alone_steps_per_s": statistics.median(alone[policy])} for policy in policies}
    if not args.alone_only:
        for policy, row in rows.items():
            row.update(pair_steps_per_s=statistics.median(pair[policy]),
                       pair_slowdown=row["alone_steps_per_s"] / statistics.median(pair[policy]),
                       worst_pair_slowdown=row["alone_steps_per_s"] / min(pair[policy]))
        print("\n| policy | alone (steps/s) | each of two at once (steps/s) | slowdown (median) | slowdown (worst) |")
        print("|---|---|---|---|---|")
        for policy, row in rows.items():
            print(f"| {policy} | {row['alone_steps_per_s']:.2f} | {row['pair_steps_per_s']:.2f} | "
                  f"{row['pair_slowdown']:.2f}x | {row['worst_pair_slowdown']:.2f}x |")
    for policy in policies[1:]:
        ratio = rows[policy]["alone_steps_per_s"] / rows["today"]["alone_steps_per_s"]
        print(f"alone, {policy} against today's: {ratio:.3f}x")
    if args.output:
        args.output.write_text(json.dumps({"command": " ".join(["python", "benchmarks/contention.py", *sys.argv[1:]]),
                                           "seconds": args.seconds, "rounds": args.rounds, "threads": args.threads,
                                           "settings": settings,
                                           "alone": alone, "pair": pair, "summary": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
