"""The evidence behind the notebooks' properties: learner runs over seeds, devices and corpora, every claim logged.

    python benchmarks/claims_evidence.py run --seeds 1 2 3 --corpora mirror derived --devices cpu --jobs 6 \
        --workdir /tmp/evidence                       # one learner run per (seed, corpus, device), 6 at a time
    python benchmarks/claims_evidence.py merge /tmp/evidence [...]   # -> benchmarks/results/claims.json + table
    python benchmarks/claims_evidence.py table                       # the table of the committed file

Each run is `benchmarks/learner_run.py` (pretrain the notebooks' models under COURSE_SEED, then execute notebooks
04-08 top to bottom in full mode) with COURSE_CLAIMS_LOG set, so every `claims.check` (a property, asserted) and
every `claims.observe` (one run's observation) of the notebooks lands in the run's log with its values, exactly as
the notebook computed them. `merge` gathers the runs of one or more work folders (each run's log and learner-run
report) into one JSON file:

    {"runs": [{"label", "seed", "corpus", "device", "fast", "machine", "torch", "threads", "corpus_lines",
               "raised": ["06_heatmaps cell 59 (code 36): AssertionError: ...", ...],
               "properties": [{"name", "held", "values"}], "observations": [{"name", "value"}]}, ...]}

tests/test_claims.py re-evaluates every property a notebook asserts on the values of every run (so a restated
threshold is checked against the evidence without training again). The table lists, per property, in how many runs
it held, and per observation, how many distinct values the runs gave.
"""
from __future__ import annotations

import argparse
import itertools
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
from learner_run import error_line  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "claims.json"
CLAIM_NOTEBOOKS = ["05", "06", "07", "08", "A1", "A4"]  # the notebooks whose properties the evidence runs back
# Properties restated after the evidence was made, from the values the runs logged under an earlier name (the same
# measurement, a narrower statement): new name -> the name the runs logged. merge adds a record under the new name.
RESTATED = {
    "06.three_scorers_beat_none_by_5_chrf": "06.attention_beats_none_by_5_chrf",  # scaled general collapsed in 3 runs
    "08.bag_of_words_points_at_the_pronoun": "08.bag_of_words_most_faithful",  # soft attention beat it in 2 runs
}


def run_label(seed: int, corpus: str, device: str) -> str:
    return f"seed{seed}-{corpus}-{device}"


def run_one(seed: int, corpus: str, device: str, workdir: Path, notebooks: list[str], threads: int) -> int:
    """One learner run in workdir/<label>/, its claims logged to claims.jsonl there; returns its exit status."""
    from course_utils.claims import LOG_ENV

    folder = workdir / run_label(seed, corpus, device)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "claims.jsonl").unlink(missing_ok=True)
    env = {**os.environ, LOG_ENV: str(folder / "claims.jsonl"), "PYTHONUNBUFFERED": "1"}
    command = [sys.executable, str(ROOT / "benchmarks" / "learner_run.py"), "--seed", str(seed), "--corpus", corpus,
               "--device", device, "--threads", str(threads), "--workdir", str(folder), "--report",
               str(folder / "report.json"), "--notebooks", *notebooks]
    started = time.perf_counter()
    with open(folder / "learner_run.log", "w") as log:
        status = subprocess.run(command, env=env, stdout=log, stderr=subprocess.STDOUT).returncode
    print(f"{folder.name}: exit {status} after {time.perf_counter() - started:.0f} s", flush=True)
    return status


def collect(folder: Path) -> dict:
    """One run's record from its learner-run report and claims log."""
    report = json.loads((folder / "report.json").read_text())
    log = folder / "claims.jsonl"  # absent where the run's notebooks claim nothing (01-03)
    records = [json.loads(line) for line in log.read_text().splitlines() if line.strip()] if log.exists() else []
    conditions, corpus = report["conditions"], report["conditions"]["corpus"]
    raised = [error_line(error) for error in report["errors"]]  # as the learner run prints them
    return {"label": folder.name, "seed": conditions["seed"], "corpus": corpus["choice"],
            "device": conditions["device"].split()[0], "fast": conditions["mode"] != "full",
            "notebooks": [nb["notebook"][:2] for nb in report["notebooks"]],
            "machine": conditions["machine"], "torch": conditions["torch"], "threads": conditions["threads"],
            "corpus_lines": corpus["lines"], "corpus_sha256": corpus["sha256"],
            "pretrain_seconds": report["pretrain"].get("seconds"), "raised": raised,
            "properties": [{k: r[k] for k in ("name", "held", "values")} for r in records if r["kind"] == "property"],
            "observations": [{k: r[k] for k in ("name", "value")} for r in records if r["kind"] == "observation"]}


def summary_table(runs: list[dict]) -> str:
    """Per property: runs where it held / runs that evaluated it; per observation: distinct values over the runs."""
    seen = {key: sorted({str(r[key]) for r in runs}) for key in ("seed", "device", "corpus")}
    lines = [f"{len(runs)} runs: seeds {seen['seed']}, devices {seen['device']}, corpora {seen['corpus']}; cells "
             f"raising in {sum(bool(r['raised']) for r in runs)}"]
    names = sorted({p["name"] for r in runs for p in r["properties"]})
    for name in names:
        held = [p["held"] for r in runs for p in r["properties"] if p["name"] == name]
        lines.append(f"  property    {name:52} held in {sum(held):2} of {len(held):2}")
    for name in sorted({o["name"] for r in runs for o in r["observations"]}):
        values = [json.dumps(o["value"]) for r in runs for o in r["observations"] if o["name"] == name]
        lines.append(f"  observation {name:52} {len(set(values)):2} distinct values in {len(values):2} runs")
    for run in runs:
        for line in run["raised"]:
            lines.append(f"  raised in {run['label']}: {line[:150]}")
    return "\n".join(lines)


def restated(records: list[dict]) -> list[dict]:
    """A record under each RESTATED name whose earlier name the run logged: the same values, judged by the property
    as it is defined now, with `restated_from` naming the logged record."""
    from course_utils.claims import PROPERTIES

    logged = {record["name"]: record for record in records}
    return [{"name": new, "held": bool(PROPERTIES[new].holds(logged[old]["values"])), "values": logged[old]["values"],
             "restated_from": old} for new, old in RESTATED.items() if old in logged and new not in logged]


def merge(folders: list[Path], output: Path) -> list[dict]:
    """Every run under `folders` (run folders, or folders of them), one record per label: the claims and raising cells
    of runs with the same label (the notebooks of one condition run in separate processes) are put together."""
    runs: dict[str, dict] = {}
    for folder in folders:
        for report in sorted(folder.glob("**/report.json")):
            record = collect(report.parent)
            if record["label"] not in runs:
                runs[record["label"]] = record
                continue
            run = runs[record["label"]]
            for key in ("raised", "properties", "observations", "notebooks"):
                run[key] += record[key]
            run["fast"] = run["fast"] or record["fast"]
    for run in runs.values():
        run["properties"] += restated(run["properties"])
    ordered = sorted(runs.values(), key=lambda r: (r["device"], r["corpus"], r["seed"]))
    output.write_text(json.dumps({"made_by": "benchmarks/claims_evidence.py", "runs": ordered}, indent=1) + "\n")
    return ordered


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="learner runs, one per (seed, corpus, device)")
    run.add_argument("--seeds", type=int, nargs="+", required=True)
    run.add_argument("--corpora", nargs="+", default=["mirror", "derived"])
    run.add_argument("--devices", nargs="+", choices=("cpu", "cuda"), default=["cpu"])
    run.add_argument("--jobs", type=int, default=1, help="runs at a time (each with --threads CPU threads)")
    run.add_argument("--threads", type=int, default=1)
    run.add_argument("--notebooks", nargs="+", default=CLAIM_NOTEBOOKS)
    run.add_argument("--workdir", type=Path, required=True)
    merged = commands.add_parser("merge", help="gather run folders into the results file")
    merged.add_argument("folders", type=Path, nargs="+")
    merged.add_argument("--output", type=Path, default=RESULTS)
    commands.add_parser("table", help="the summary table of the committed results file")
    args = parser.parse_args(argv)
    if args.command == "run":
        conditions = list(itertools.product(args.seeds, args.corpora, args.devices))
        with ThreadPoolExecutor(max_workers=args.jobs) as pool:
            statuses = list(pool.map(lambda c: run_one(*c, args.workdir, args.notebooks, args.threads), conditions))
        return 0 if not any(statuses) else 1
    if args.command == "merge":
        print(summary_table(merge(args.folders, args.output)))
        return 0
    print(summary_table(json.loads(RESULTS.read_text())["runs"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
