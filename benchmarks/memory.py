"""Peak resident memory (RSS) of training: the lecture recipe vs the classic recipe, each in a fresh process.

    python benchmarks/memory.py            # one epoch of the lecture recipe, 2,000 classic steps
    python benchmarks/memory.py --quick    # 1,000 pairs / 300 classic steps

Each measurement runs in its own Python process (so one cannot inherit the other's peak) and reports
resource.getrusage(...).ru_maxrss; "baseline" is the same process after importing torch and loading the data,
without training, so the difference is what training itself costs.
"""
from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def child(what: str, quick: bool) -> None:
    """Runs in the subprocess: do `what`, print the peak RSS in MiB as JSON."""
    import torch
    from common import id_pairs, load_data

    data = load_data()
    if what == "lecture":
        from course_utils.recipes import DEFAULT_RECIPE, get_recipe
        from course_utils.zoo import train_recipe
        overrides = dict(epochs=1, device="cpu", eval_bleu=False)
        if quick:
            overrides["max_train_pairs"] = 1000
        train_recipe(get_recipe(DEFAULT_RECIPE), data, progress=False, log=None, **overrides)
    elif what == "classic":
        from classic_run import train_classic
        train_ids = id_pairs(data.splits.train, data.src_vocab, data.tgt_vocab)
        train_classic(train_ids, len(data.src_vocab), len(data.tgt_vocab), steps=300 if quick else 2000,
                      progress=False)
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    print(json.dumps({"what": what, "peak_mib": peak_kib / 1024, "threads": torch.get_num_threads()}))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--child", choices=["baseline", "lecture", "classic"], help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(args.child, args.quick)
        return 0
    from common import machine, table

    from course_utils.recipes import DEFAULT_RECIPE

    print(f"machine: {machine()}")
    peaks = {}
    for what in ("baseline", "classic", "lecture"):
        command = [sys.executable, str(Path(__file__).resolve()), "--child", what] + (["--quick"] if args.quick else [])
        output = subprocess.run(command, check=True, capture_output=True, text=True).stdout
        peaks[what] = json.loads(output.strip().splitlines()[-1])["peak_mib"]
    labels = {"baseline": "import torch + load data (no training)", "classic": "classic recipe (1 pair/step)",
              "lecture": f"{DEFAULT_RECIPE}, 1 epoch"}
    rows = [[labels[what], f"{peak:.0f}", f"{peak - peaks['baseline']:+.0f}"] for what, peak in peaks.items()]
    print(table(rows, ["process", "peak RSS MiB", "vs baseline"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
