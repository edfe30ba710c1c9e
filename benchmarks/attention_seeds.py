"""Every lecture recipe over several seeds: test BLEU with its spread, dev curves and attention sharpness per epoch.

    python benchmarks/attention_seeds.py                                  # every lecture recipe + exhibits, 5 seeds
    python benchmarks/attention_seeds.py --device cuda --workers 12       # the same on a GPU, 12 runs at once
    python benchmarks/attention_seeds.py --recipes lecture-none exhibit-dot-unscaled --seeds 0 1 2

Each (recipe, seed) is trained as `course_utils.zoo.train_recipe` trains it (the package's own loop: the seed
decides the weights, the batch order and dropout) and becomes one record of the JSON list written to --output (default
benchmarks/results/attention_seeds.json):

    recipe, seed, attention, test_bleu, test_chrf (greedy, whole test split), dev_bleu / train_loss per epoch,
    attention statistics on the dev set (teacher forced) before training and after every epoch: mean entropy of a
    decoder step's weights (nats), mean largest weight, and where the largest weight lands (share of steps on the
    first source token, on the last one (EOS), within 0.2 of the diagonal), train_seconds, device, torch version.

The per-epoch statistics are taken when the training loop logs its epoch line (`train`'s `log` callback), so
they describe the model the loop has after that epoch. A summary table (mean, sample sd, worst, best per
recipe) is printed at the end.
"""
from __future__ import annotations

import argparse
import json
import math
import platform
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import run_jobs  # noqa: E402

from course_utils.data import TranslationDataset, collate_batch, load_course_data
from course_utils.evaluate import evaluate
from course_utils.metrics import attention_entropy
from course_utils.recipes import RECIPES, get_recipe
from course_utils.runtime import eval_mode, resolve_device
from course_utils.seq2seq import Seq2Seq
from course_utils.train import train

RESULTS = Path(__file__).resolve().parent / "results" / "attention_seeds.json"
DEFAULT_RECIPES = [name for name in RECIPES if name.startswith(("lecture-", "exhibit-"))]


@torch.no_grad()
def attention_statistics(model, pairs, src_vocab, tgt_vocab, batch_size: int = 256) -> dict | None:
    """Mean entropy, mean largest weight and where the largest weight lands, over every decoder step of `pairs`
    (teacher forced). None for a model without attention."""
    dataset = TranslationDataset(pairs, src_vocab, tgt_vocab)
    entropy, largest, first, last, diagonal, steps = 0.0, 0.0, 0, 0, 0, 0
    with eval_mode(model):
        for start in range(0, len(dataset), batch_size):
            batch = collate_batch([dataset[i] for i in range(start, min(start + batch_size, len(dataset)))])
            batch = batch.to(model.device)
            weights = model(batch.src, batch.src_lengths, batch.tgt).attention  # (B, T, S)
            if weights is None:
                return None
            for row in range(weights.size(0)):
                S, T = int(batch.src_lengths[row]), int(batch.tgt_lengths[row])
                matrix = weights[row, :T, :S].float().cpu()  # (T, S)
                argmax = matrix.argmax(dim=-1)  # (T,)
                entropy += float(attention_entropy(matrix).sum())
                largest += float(matrix.max(dim=-1).values.sum())
                first += int((argmax == 0).sum())
                last += int((argmax == S - 1).sum())
                relative_step = (torch.arange(T) + 0.5) / T  # (T,)
                relative_source = (argmax + 0.5) / S  # (T,)
                diagonal += int(((relative_source - relative_step).abs() <= 0.2).sum())
                steps += T
    return {"entropy": entropy / steps, "max_weight": largest / steps, "argmax_first": first / steps,
            "argmax_last": last / steps, "near_diagonal": diagonal / steps}


def run_one(recipe_name: str, seed: int, device: str, data=None) -> dict:
    """Train one recipe with one seed, as `zoo.train_recipe` does (seed, build, `train`), and measure it.

    Loads the course data when `data` is None.
    """
    data = data or load_course_data(log=None)
    recipe = get_recipe(recipe_name)
    config = recipe.train_config(seed=seed, device=device)
    torch.manual_seed(config.seed)  # the weights' initialisation, exactly as train_recipe
    model = Seq2Seq(recipe.model_config(data.src_vocab, data.tgt_vocab)).to(resolve_device(device))
    curve = [attention_statistics(model, data.splits.dev, data.src_vocab, data.tgt_vocab)]  # before training

    def log(line: str) -> None:  # `train` calls it once per epoch, after the dev evaluation
        if line.startswith("epoch"):
            curve.append(attention_statistics(model, data.splits.dev, data.src_vocab, data.tgt_vocab))

    started = time.perf_counter()
    history = train(model, data, config, progress=False, log=log)
    seconds = time.perf_counter() - started
    test = evaluate(model, data.splits.test, data.src_vocab, data.tgt_vocab)
    return {"recipe": recipe_name, "seed": seed, "attention": recipe.model.attention,
            "test_bleu": round(test.bleu, 2), "test_chrf": round(test.chrf, 2),
            "dev_bleu": [round(b, 2) for b in history.dev_bleu],
            "train_loss": [round(x, 4) for x in history.train_loss],
            "attention_per_epoch": curve, "train_seconds": round(history.train_seconds, 1),
            "wall_seconds": round(seconds, 1), "device": torch.cuda.get_device_name() if device.startswith("cuda")
            else platform.processor() or platform.machine(), "torch": torch.__version__,
            "signature": test.signature}


def _worker(job: tuple[str, int, str]) -> dict:
    torch.set_num_threads(1)
    return run_one(*job)


def summary(records: list[dict]) -> str:
    """Mean, sample sd, worst and best test BLEU per recipe, in the order the recipes first appear."""
    lines = [f"{'recipe':28} {'seeds':>5} {'mean':>6} {'sd':>5} {'worst':>6} {'best':>6}"]
    for name in dict.fromkeys(record["recipe"] for record in records):
        bleu = [record["test_bleu"] for record in records if record["recipe"] == name]
        sd = statistics.stdev(bleu) if len(bleu) > 1 else math.nan
        lines.append(f"{name:28} {len(bleu):>5} {statistics.mean(bleu):6.2f} {sd:5.2f} {min(bleu):6.2f} "
                     f"{max(bleu):6.2f}")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--recipes", nargs="+", default=DEFAULT_RECIPES)
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2, 3, 4])
    parser.add_argument("--device", default="cpu", help="cpu or cuda")
    parser.add_argument("--workers", type=int, default=1, help="runs at once (processes; useful on a GPU)")
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    for name in args.recipes:
        get_recipe(name)  # unknown names fail before any training
    # seed-major: a sweep cut short still has the first seeds of every recipe
    jobs = [(name, seed, args.device) for seed in args.seeds for name in args.recipes]
    print(f"{len(jobs)} runs ({len(args.recipes)} recipes x {len(args.seeds)} seeds) on {args.device}", flush=True)
    records: list[dict] = []
    order = {(name, seed): index for index, (name, seed) in enumerate(
        (name, seed) for name in args.recipes for seed in args.seeds)}  # the file lists recipe by recipe
    args.output.parent.mkdir(parents=True, exist_ok=True)

    def keep(record: dict) -> None:  # the file is rewritten after every run: an interrupted sweep keeps its results
        records.append(record)
        records.sort(key=lambda r: order[r["recipe"], r["seed"]])
        args.output.write_text(json.dumps(records, indent=1) + "\n")
        print(f"  {record['recipe']} seed {record['seed']}: test BLEU {record['test_bleu']}", flush=True)

    if args.workers > 1:
        run_jobs(_worker, jobs, args.workers, keep)
    else:  # one process: the data is loaded once for all runs
        data = load_course_data(log=None)
        run_jobs(lambda job: run_one(*job, data), jobs, 1, keep)
    print(summary(records))
    print(f"written to {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
