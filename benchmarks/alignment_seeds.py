"""Notebook 10's alignment lab over seeds: every attention kind trained on the toy task with gold alignments.

    python benchmarks/alignment_seeds.py                          # every kind + the <eos>-masked remedy, 3 seeds
    python benchmarks/alignment_seeds.py --workers 14             # 14 runs at once (one thread each)
    python benchmarks/alignment_seeds.py --kinds bahdanau dot --seeds 0 --output /tmp/a.json

Each (kind, seed) draws its own toy corpus (`course_utils.alignment.toy_pairs`, seeded), trains
`alignment.toy_model` with the package's `train` on the CPU (the seed decides the weights, batch order and
dropout), and becomes one record of the "runs" list written to --output (default
benchmarks/results/alignment.json):

    kind, seed, mask_eos (the remedy: <eos> is not a key), test_bleu (greedy), aer / precision / recall of every
    alignment method (`alignment.ALIGNERS`) on the test split's gold links, the attention mass on <eos> and on
    punctuation (teacher forced on the references), BLEU with uniform and frozen attention, erasure (how many
    translations change when the most attended, a random, the least attended source word is deleted) and the
    rank agreement of attention with saliency and leave-one-out importance, train_seconds.

IBM Model 1 (no neural network, deterministic) is scored once per seed's corpus ("ibm1" records). A summary table
(mean and range over seeds) is printed at the end and stored as "table".
"""
from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import run_jobs  # noqa: E402

from course_utils import alignment, explanation
from course_utils.seq2seq import ATTENTION_KINDS
from course_utils.train import TrainConfig, train

RESULTS = Path(__file__).resolve().parent / "results" / "alignment.json"
KINDS = [kind for kind in ATTENTION_KINDS if kind != "none"]
REMEDY_KINDS = ["bahdanau", "scaled_dot"]  # also trained with <eos> masked out of the keys
SETTINGS = dict(pairs=4000, epochs=12, batch_size=32, test_pairs=300)


def run_one(job: tuple[str, int, bool]) -> dict:
    """Train one toy model and measure it: (kind, seed, mask_eos) -> record ("ibm1" as kind: the baseline)."""
    kind, seed, mask_eos = job
    torch.set_num_threads(1)
    gold = alignment.toy_pairs(SETTINGS["pairs"], seed)
    data = alignment.toy_course_data(gold, seed)
    lookup = alignment.gold_by_pair(gold)
    test = [lookup[pair] for pair in data.splits.test][:SETTINGS["test_pairs"]]
    if kind == "ibm1":
        scores = alignment.ibm1_scores([lookup[pair] for pair in data.splits.train], test)
        return {"kind": "ibm1", "seed": seed, "mask_eos": False, "aer": {"IBM Model 1": scores._asdict()}}
    torch.manual_seed(seed)
    model = alignment.toy_model(kind, data, mask_eos=mask_eos)
    config = TrainConfig(epochs=SETTINGS["epochs"], batch_size=SETTINGS["batch_size"], seed=seed, device="cpu",
                         eval_bleu=False)
    history = train(model, data, config, progress=False, log=None)
    model.eval()
    src, tgt = data.src_vocab, data.tgt_vocab
    record = {"kind": kind, "seed": seed, "mask_eos": mask_eos, "train_seconds": history.train_seconds,
              "test_bleu": explanation.bleu_with_attention(model, src, tgt, test),
              "aer": {m: s._asdict() for m, s in alignment.alignment_scores(model, data, test).items()},
              "sink": explanation.mean_sink_mass(model, src, tgt, test)._asdict()}
    if mask_eos:
        return record
    if kind != "location":
        record["replaced_bleu"] = {mode: explanation.bleu_with_attention(model, src, tgt, test, mode)
                                   for mode in explanation.REPLACEMENTS}
    erasure = explanation.erasure_effects(model, src, tgt, [p.source for p in test], seed)
    record["erasure"] = {label: e._asdict() for label, e in erasure.items()}
    record["rank_agreement"] = explanation.rank_agreements(model, src, tgt, test[:100])
    return record


def summary(runs: list[dict]) -> list[dict]:
    """One row per (kind, mask_eos): mean, min and max over seeds of test BLEU, each method's AER and the sink."""
    rows = {}
    for run in runs:
        row = rows.setdefault((run["kind"], run["mask_eos"]), {"kind": run["kind"], "mask_eos": run["mask_eos"],
                                                                "seeds": 0, "values": {}})
        row["seeds"] += 1
        values = {f"AER {m}": s["aer"] for m, s in run["aer"].items()}
        if "test_bleu" in run:
            values |= {"test BLEU": run["test_bleu"], "mass on <eos>": run["sink"]["eos"],
                       "mass on punctuation": run["sink"]["punctuation"]}
        for key, value in values.items():
            row["values"].setdefault(key, []).append(value)
    return [{**{k: v for k, v in row.items() if k != "values"},
             **{key: {"mean": sum(v) / len(v), "min": min(v), "max": max(v)} for key, v in row["values"].items()}}
            for row in rows.values()]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kinds", nargs="+", default=KINDS, choices=KINDS)
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    jobs = [(kind, seed, False) for seed in args.seeds for kind in args.kinds]
    jobs += [(kind, seed, True) for seed in args.seeds for kind in REMEDY_KINDS if kind in args.kinds]
    jobs += [("ibm1", seed, False) for seed in args.seeds]
    runs, started = [], time.perf_counter()

    def done(record: dict) -> None:
        runs.append(record)
        print(f"{record['kind']:>15} seed {record['seed']} mask_eos={record['mask_eos']!s:5} "
              "AER " + ", ".join(f"{m} {s['aer']:.3f}" for m, s in record["aer"].items()), flush=True)

    run_jobs(run_one, jobs, args.workers, done)
    runs.sort(key=lambda r: (r["kind"], r["mask_eos"], r["seed"]))
    result = {"settings": SETTINGS, "machine": f"{platform.processor() or platform.machine()}, torch "
              f"{torch.__version__}, CPU, one thread per run", "wall_seconds": time.perf_counter() - started,
              "table": summary(runs), "runs": runs}
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {args.output} ({len(runs)} runs, {result['wall_seconds']:.0f} s)")


if __name__ == "__main__":
    main()
