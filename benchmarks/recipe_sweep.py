"""Recipe tuning on the dev split: variants of a recipe over several seeds, dev BLEU with its spread and its curve.

    python benchmarks/recipe_sweep.py --recipe lecture-bahdanau --seeds 0 1 2 \\
        --variant source bucket_by=source --variant source-drop0.2 bucket_by=source dropout=0.2
    python benchmarks/recipe_sweep.py --device cuda --workers 9 ...   # many runs at once on a GPU

A variant is a name and `field=value` settings, each a field of the recipe's ModelConfig or TrainConfig (values are
Python literals; anything else is a string). "base" (the recipe as it is) is always included; `--set` settings
apply to every variant, base included. Each (variant, seed)
trains as `zoo.train_recipe` trains (the seed decides the weights, the batch order and dropout) and is scored
on the **dev** split only (greedy, the final weights: averaged ones included); the test split is kept for the one
recipe finally chosen (benchmarks/time_to_quality.py). Records (variant, settings, seed, dev BLEU after every epoch,
final dev BLEU, seconds per epoch, device) go to --output as a JSON list; a table of mean, sd, worst and best dev
BLEU per variant is printed at the end. Seconds are the training loop's own (evaluation excluded); runs sharing a
machine slow each other, so compare times only within one sweep.
"""
from __future__ import annotations

import argparse
import ast
import dataclasses
import json
import platform
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import run_jobs  # noqa: E402

from course_utils.data import load_course_data
from course_utils.evaluate import evaluate
from course_utils.recipes import Recipe, get_recipe
from course_utils.seq2seq import ModelConfig
from course_utils.train import TrainConfig
from course_utils.zoo import train_recipe

RESULTS = Path(__file__).resolve().parent / "results" / "recipe_sweep.json"
MODEL_FIELDS = {field.name for field in dataclasses.fields(ModelConfig)}
TRAIN_FIELDS = {field.name for field in dataclasses.fields(TrainConfig)}


def parse_setting(text: str) -> tuple[str, object]:
    """'dropout=0.2' -> ('dropout', 0.2); 'bucket_by=source' -> ('bucket_by', 'source')."""
    name, _, value = text.partition("=")
    if not value or name not in MODEL_FIELDS | TRAIN_FIELDS:
        raise SystemExit(f"recipe_sweep: {text!r} is not field=value with a ModelConfig or TrainConfig field; "
                         f"fields: {', '.join(sorted(MODEL_FIELDS | TRAIN_FIELDS))}")
    try:
        return name, ast.literal_eval(value)
    except (ValueError, SyntaxError):
        return name, value


def apply(recipe: Recipe, settings: dict) -> Recipe:
    """The recipe with these ModelConfig and TrainConfig fields replaced."""
    model = {name: value for name, value in settings.items() if name in MODEL_FIELDS}
    training = {name: value for name, value in settings.items() if name in TRAIN_FIELDS}
    return recipe.with_model(**model).with_training(**training)


def run_one(job: tuple[str, str, dict, int, str, int]) -> dict:
    """Train one (variant, seed) with train_recipe and score it on the dev split."""
    recipe_name, variant, settings, seed, device, threads = job
    torch.set_num_threads(threads)
    data = load_course_data(log=None)
    recipe = apply(get_recipe(recipe_name), settings)
    started = time.perf_counter()
    trained = train_recipe(recipe, data, progress=False, log=None, seed=seed, device=device)
    wall, model, history = time.perf_counter() - started, trained.model, trained.history
    dev = evaluate(model, data.splits.dev, data.src_vocab, data.tgt_vocab, beam_width=recipe.beam_width)
    return {"recipe": recipe_name, "variant": variant, "settings": settings, "seed": seed,
            "dev_bleu": round(dev.bleu, 2), "decoding": "greedy" if recipe.beam_width == 1 else
            f"beam {recipe.beam_width}", "dev_bleu_per_epoch": [round(b, 2) for b in history.dev_bleu],
            "epoch_seconds": [round(s, 1) for s in history.epoch_seconds], "wall_seconds": round(wall, 1),
            "threads": threads, "device": torch.cuda.get_device_name() if device.startswith("cuda")
            else platform.processor() or platform.machine(), "torch": torch.__version__}


def summary(records: list[dict]) -> str:
    """Mean, sd, worst and best final dev BLEU and mean training seconds per variant."""
    lines = [f"{'variant':30} {'seeds':>5} {'mean':>6} {'sd':>5} {'worst':>6} {'best':>6} {'train s':>8}"]
    for variant in dict.fromkeys(record["variant"] for record in records):
        runs = [record for record in records if record["variant"] == variant]
        bleu = [record["dev_bleu"] for record in runs]
        sd = statistics.stdev(bleu) if len(bleu) > 1 else float("nan")
        seconds = statistics.mean(sum(record["epoch_seconds"]) for record in runs)
        lines.append(f"{variant:30} {len(bleu):>5} {statistics.mean(bleu):6.2f} {sd:5.2f} {min(bleu):6.2f} "
                     f"{max(bleu):6.2f} {seconds:8.0f}")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--recipe", default="lecture-bahdanau")
    parser.add_argument("--variant", nargs="+", action="append", default=[], metavar=("NAME", "FIELD=VALUE"),
                        help="a variant's name and its settings (repeatable)")
    parser.add_argument("--set", nargs="+", default=[], metavar="FIELD=VALUE",
                        help="settings applied to every variant, base included (e.g. epochs=1 for a smoke run)")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--device", default="cpu", help="cpu or cuda")
    parser.add_argument("--workers", type=int, default=1, help="runs at once (processes)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads per run")
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    get_recipe(args.recipe)
    common = dict(parse_setting(text) for text in args.set)
    variants = {"base": common} | {name: common | dict(parse_setting(text) for text in settings)
                                   for name, *settings in args.variant}
    jobs = [(args.recipe, name, settings, seed, args.device, args.threads)
            for seed in args.seeds for name, settings in variants.items()]  # seed-major: a cut-short sweep is usable
    print(f"{len(jobs)} runs ({len(variants)} variants x {len(args.seeds)} seeds) of {args.recipe} on {args.device}",
          flush=True)
    records: list[dict] = []
    args.output.parent.mkdir(parents=True, exist_ok=True)

    def keep(record: dict) -> None:  # rewritten after every run: an interrupted sweep keeps its results
        records.append(record)
        args.output.write_text(json.dumps(records, indent=1) + "\n")
        print(f"  {record['variant']} seed {record['seed']}: dev BLEU {record['dev_bleu']} "
              f"({sum(record['epoch_seconds']):.0f} s)", flush=True)

    run_jobs(run_one, jobs, args.workers, keep)
    print(summary(records))
    print(f"written to {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
