"""Notebook 09's comparison: the lecture Transformer against the lecture GRU (lecture-bahdanau), over seeds.

    python benchmarks/transformer_vs_gru.py --quick                  # local smoke test: tiny, CPU, seconds
    python benchmarks/transformer_vs_gru.py --sweep --gpu-workers 8  # tune lecture-transformer on the DEV split
    python benchmarks/transformer_vs_gru.py --seeds 0 1 2 3 4 --cpu-budget 120 --cpu-workers 7 --gpu-workers 4

Each run is its own process. GPU runs train each recipe as it is (equal epochs). CPU runs stand for the 2-core course
machine: CUDA_VISIBLE_DEVICES= , 2 torch threads, pinned with taskset to 2 cores of their own, and every recipe gets
the same wall-clock training budget (--cpu-budget seconds; equal time, not equal epochs). Dev evaluation during
training is dev loss on 200 pairs only, so the budget is spent training. Each run then reports test BLEU and chrF
(greedy, sacreBLEU), parameters and training throughput (target tokens per second of training: the epochs' tokens
over the training time; under a budget the last epoch may be partial, so this slightly overstates CPU runs).
--sweep scores variants of lecture-transformer on the dev split only (the test split is for the comparison). Results
(records, a summary per recipe and device, the machine) go to benchmarks/results/transformer_vs_gru.json.
"""
from __future__ import annotations

import argparse
import json
import os
import queue
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results" / "transformer_vs_gru.json"
RECIPES = ("lecture-bahdanau", "lecture-transformer")
SWEEP = {  # name -> settings on top of lecture-transformer (TransformerConfig or TrainConfig fields)
    "base": {}, "lr5e-4": {"learning_rate": 5e-4}, "lr2e-3": {"learning_rate": 2e-3},
    "layers3": {"layers": 3}, "heads8": {"heads": 8}, "drop0.2": {"dropout": 0.2}, "ff1024": {"ff_size": 1024},
    "batch64": {"batch_size": 64}, "decay0.9": {"lr_decay": 0.9}, "ls0.2": {"label_smoothing": 0.2},
}


def run_one(job: dict) -> dict:
    """Train one (recipe, settings, seed) on this process's device; score it on dev (sweep) or test."""
    import dataclasses

    import torch

    from course_utils.data import load_course_data
    from course_utils.evaluate import evaluate
    from course_utils.recipes import get_recipe
    from course_utils.seq2seq import count_parameters
    from course_utils.train import TrainConfig, sample_pairs
    from course_utils.zoo import train_recipe

    torch.set_num_threads(job["threads"])
    data = load_course_data(log=None)
    recipe = get_recipe(job["recipe"])
    train_fields = {f.name for f in dataclasses.fields(TrainConfig)}
    model_settings = {k: v for k, v in job["settings"].items() if k not in train_fields}
    train_settings = {k: v for k, v in job["settings"].items() if k in train_fields}
    recipe = recipe.with_model(**model_settings).with_training(**train_settings)
    overrides = {**dict(seed=job["seed"], device=job["device"], eval_bleu=False, max_eval_pairs=200,
                        time_budget=job.get("budget")), **job.get("overrides", {})}
    trained = train_recipe(recipe, data, progress=False, log=None, **overrides)
    history, config = trained.history, trained.train_config
    pairs = sample_pairs(data.splits.train, config.max_train_pairs, config.seed)
    tokens = sum(len(pair.target.split()) + 1 for pair in pairs) * history.epochs  # EOS included
    split = data.splits.dev if job["split"] == "dev" else data.splits.test
    split = split[:job["eval_pairs"]] if job.get("eval_pairs") else split
    result = evaluate(trained.model.to(job["device"]), split, data.src_vocab, data.tgt_vocab)
    device = torch.cuda.get_device_name() if job["device"] == "cuda" else "cpu"
    return {**{k: job[k] for k in ("recipe", "variant", "settings", "seed", "split")}, "device": device,
            "kind": job["kind"], "threads": job["threads"], "budget_s": job.get("budget"),
            "epochs": history.epochs, "train_seconds": round(history.train_seconds, 1),
            "tokens_per_s": round(tokens / max(history.train_seconds, 1e-9)), "params": count_parameters(trained.model),
            "bleu": round(result.bleu, 2), "chrf": round(result.chrf, 2), "torch": torch.__version__}


def _launch(job: dict, cores: str | None) -> dict:
    """Run `job` in a fresh process (pinned to `cores` with taskset when given); its last stdout line is the JSON."""
    env = dict(os.environ, OMP_NUM_THREADS=str(job["threads"]), COURSE_THREADS=str(job["threads"]))
    if job["kind"] == "cpu":
        env["CUDA_VISIBLE_DEVICES"] = ""
    command = [sys.executable, __file__, "--one", json.dumps(job)]
    if cores:
        command = ["taskset", "-c", cores, *command]
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    if done.returncode:
        return {**job, "error": done.stderr[-2000:]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def run_all(jobs: list[dict], slots: dict[str, list[str | None]], on_result) -> None:
    """Each job takes a free slot of its kind ("cpu": a core pair; "gpu": a share of the GPU) until all are done."""
    free = {kind: queue.Queue() for kind in slots}
    for kind, cores in slots.items():
        for core in cores:
            free[kind].put(core)

    def work(job: dict) -> dict:
        core = free[job["kind"]].get()
        try:
            return _launch(job, core)
        finally:
            free[job["kind"]].put(core)

    with ThreadPoolExecutor(sum(len(cores) for cores in slots.values())) as pool:
        for result in pool.map(work, jobs):
            on_result(result)


def summarise(records: list[dict]) -> list[dict]:
    """Mean, sd, worst and best per (kind, recipe, variant) of BLEU and chrF, with parameters, epochs, tokens/s."""
    rows = []
    keys = dict.fromkeys((r["kind"], r["recipe"], r["variant"], r["split"]) for r in records if "error" not in r)
    for kind, recipe, variant, split in keys:
        runs = [r for r in records if (r.get("kind"), r["recipe"], r["variant"], r["split"]) == (kind, recipe, variant,
                                                                                                 split)]
        bleu, chrf = [r["bleu"] for r in runs], [r["chrf"] for r in runs]
        sd = lambda xs: round(statistics.stdev(xs), 2) if len(xs) > 1 else None  # noqa: E731
        rows.append({"kind": kind, "recipe": recipe, "variant": variant, "split": split, "seeds": len(runs),
                     "bleu_mean": round(statistics.mean(bleu), 2), "bleu_sd": sd(bleu), "bleu_min": min(bleu),
                     "bleu_max": max(bleu), "chrf_mean": round(statistics.mean(chrf), 2), "chrf_sd": sd(chrf),
                     "params": runs[0]["params"], "epochs_mean": round(statistics.mean(r["epochs"] for r in runs), 1),
                     "train_seconds_mean": round(statistics.mean(r["train_seconds"] for r in runs), 1),
                     "tokens_per_s_mean": round(statistics.mean(r["tokens_per_s"] for r in runs))})
    return rows


def table(rows: list[dict]) -> str:
    """The summary as aligned text (what notebook 09 prints)."""
    header = f"{'run':5} {'recipe':20} {'variant':9} {'split':5} {'n':>2} {'BLEU':>6} {'sd':>5} {'chrF':>6} " \
             f"{'params':>10} {'epochs':>6} {'train s':>7} {'tok/s':>7}"
    lines = [header]
    for r in rows:
        lines.append(f"{r['kind']:5} {r['recipe']:20} {r['variant']:9} {r['split']:5} {r['seeds']:>2} "
                     f"{r['bleu_mean']:6.2f} {r['bleu_sd'] or 0:5.2f} {r['chrf_mean']:6.2f} {r['params']:>10,} "
                     f"{r['epochs_mean']:6.1f} {r['train_seconds_mean']:7.1f} {r['tokens_per_s_mean']:>7,}")
    return "\n".join(lines)


def _jobs(args: argparse.Namespace) -> list[dict]:
    base = dict(settings={}, variant="recipe", threads=2, eval_pairs=None, split="test")
    if args.quick:
        quick = dict(base, kind="cpu", device="cpu", eval_pairs=50, budget=None,
                     overrides=dict(epochs=1, max_train_pairs=200, max_eval_pairs=50))
        return [dict(quick, recipe=recipe, seed=seed) for recipe in RECIPES for seed in args.seeds]
    if args.sweep:
        return [dict(base, kind="gpu", device="cuda", recipe=args.sweep_recipe, variant=name, settings=settings,
                     seed=seed, split="dev") for name, settings in (args.variants or SWEEP).items()
                for seed in args.seeds]
    jobs = [dict(base, kind="cpu", device="cpu", recipe=r, seed=s, budget=args.cpu_budget,
                 overrides=dict(epochs=args.cpu_epochs)) for s in args.seeds for r in RECIPES]
    jobs += [dict(base, kind="gpu", device="cuda", recipe=r, seed=s) for s in args.seeds for r in RECIPES]
    return [job for job in jobs if args.only in (None, job["kind"])]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--one", help=argparse.SUPPRESS)
    parser.add_argument("--quick", action="store_true", help="a smoke test: 200 pairs, one epoch, on this CPU")
    parser.add_argument("--sweep", action="store_true", help="lecture-transformer variants, dev split, on the GPU")
    parser.add_argument("--variants", type=json.loads, default=None, help="--sweep's variants as a JSON object "
                        "{name: {field: value}} (default: SWEEP)")
    parser.add_argument("--sweep-recipe", default="lecture-transformer", help="the recipe --sweep varies")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--only", choices=("cpu", "gpu"), default=None, help="only the CPU or only the GPU runs")
    parser.add_argument("--cpu-budget", type=float, default=120.0, help="seconds of training per CPU run")
    parser.add_argument("--cpu-epochs", type=int, default=10, help="epoch cap of a CPU run (the recipes' 10)")
    parser.add_argument("--cpu-workers", type=int, default=7, help="CPU runs at once, 2 cores each")
    parser.add_argument("--gpu-workers", type=int, default=4, help="GPU runs at once (they share the GPU)")
    parser.add_argument("--first-core", type=int, default=0, help="CPU runs take cores from this one on")
    parser.add_argument("--output", type=Path, default=None, help=f"JSON results (default {RESULTS}; --quick: none)")
    args = parser.parse_args(argv)
    if args.one:
        print(json.dumps(run_one(json.loads(args.one))))
        return 0
    jobs = _jobs(args)
    gpu_cores = [None] * args.gpu_workers
    cpu_cores = [f"{args.first_core + 2 * i},{args.first_core + 2 * i + 1}" for i in range(args.cpu_workers)]
    slots = {"cpu": cpu_cores if not args.quick else [None], "gpu": gpu_cores}
    records: list[dict] = []
    started = time.perf_counter()

    def on_result(record: dict) -> None:
        records.append(record)
        print(json.dumps(record)[:400], flush=True)

    run_all(jobs, slots, on_result)
    rows = summarise(records)
    print(table(rows))
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from common import machine

    result = {"machine": machine(), "wall_seconds": round(time.perf_counter() - started), "summary": rows,
              "records": records, "command": " ".join(sys.argv[1:] if argv is None else argv)}
    output = args.output or (None if args.quick else RESULTS)
    if output:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(json.dumps(result, indent=1) + "\n")
        print(f"results written to {output}")
    return 1 if any("error" in record for record in records) else 0


if __name__ == "__main__":
    sys.exit(main())
