"""The test pairs whose English side never occurs in training: the course's GRU against its Transformer, over seeds.

    python benchmarks/unseen_english.py --device cuda                 # seeds 0-4
    python benchmarks/unseen_english.py --device cpu --seeds 0 1 --output /tmp/unseen.json

About half of the test split's English sides also occur in training (notebook 05 counts them). Each seed trains
lecture-bahdanau and lecture-transformer as their recipes say (that seed for both) and scores them with greedy
decoding and sacreBLEU on the whole test split and on its pairs whose English side never occurs in training. The
runs go to --output (default benchmarks/results/unseen_english.json) with the command and the machine; property
"09.transformer_ahead_on_new_english" (course_utils.claims) is judged on every run.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import machine  # noqa: E402

from course_utils.claims import PROPERTIES
from course_utils.data import load_course_data
from course_utils.evaluate import evaluate
from course_utils.recipes import get_recipe
from course_utils.zoo import train_recipe

RESULTS = Path(__file__).resolve().parent / "results" / "unseen_english.json"
PROPERTY = "09.transformer_ahead_on_new_english"
RECIPES = {"gru": "lecture-bahdanau", "transformer": "lecture-transformer"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=list(range(5)))
    parser.add_argument("--device", default="auto")
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args()
    data = load_course_data(log=None)
    train_english = {pair.target for pair in data.splits.train}
    unseen = [pair for pair in data.splits.test if pair.target not in train_english]
    start, runs, held = time.perf_counter(), [], []
    for seed in args.seeds:
        run = {"seed": seed, "test_pairs": len(data.splits.test), "unseen_pairs": len(unseen)}
        for name, recipe in RECIPES.items():
            trained = train_recipe(get_recipe(recipe), data, progress=False, log=None, seed=seed, device=args.device)
            for split, pairs in (("test", data.splits.test), ("unseen", unseen)):
                run[f"{name}_{split}_bleu"] = round(evaluate(trained.model, pairs, data.src_vocab,
                                                            data.tgt_vocab).bleu, 2)
        held.append(PROPERTIES[PROPERTY].holds({"gru_bleu": run["gru_unseen_bleu"],
                                                "transformer_bleu": run["transformer_unseen_bleu"]}))
        print(f"seed {seed}: {run}  {PROPERTY}: {'holds' if held[-1] else 'DOES NOT HOLD'}", flush=True)
        runs.append(run)
    command = f"python benchmarks/unseen_english.py --device {args.device} --seeds {' '.join(map(str, args.seeds))}"
    args.output.write_text(json.dumps({
        "command": command + ("" if args.output == RESULTS else f" --output {args.output}"), "machine": machine(),
        "wall_seconds": round(time.perf_counter() - start, 1), "runs": runs}, indent=1) + "\n")
    print(f"{PROPERTY} held in {sum(held)} of {len(runs)} runs; written to {args.output}")


if __name__ == "__main__":
    main()
