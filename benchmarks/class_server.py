"""Sizing a class's server: each core notebook run top to bottom in a fresh kernel, as one student would, with the
trained models already cached (as after `pretrain --import` of the class archive), timed for peak memory and CPU.

    python benchmarks/class_server.py                      # notebooks 00-07, writes results/class_server.{md,json}
    python benchmarks/class_server.py --notebooks 05 06    # some of them

Each notebook runs in its own `jupyter nbconvert --execute` process (into a temporary copy: the committed notebook is
left alone); os.wait4 on that process returns the resources of it and of its kernel, so the peak resident memory is
the larger of the two processes' peaks and the CPU time is their user + system seconds. A student who keeps every
notebook's kernel open holds the sum of the peaks; one who closes each holds the largest.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
import common  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"


def measure(notebook: Path) -> dict:
    """Run `notebook` in a fresh kernel; its peak memory (MiB), CPU seconds and wall seconds."""
    with tempfile.TemporaryDirectory() as folder:
        copy = Path(folder) / notebook.name
        shutil.copy(notebook, copy)
        command = [sys.executable, "-m", "jupyter", "nbconvert", "--to", "notebook", "--execute", "--inplace",
                   "--ExecutePreprocessor.timeout=1800", str(copy)]
        log = Path(folder) / "nbconvert.log"  # a file, not a pipe: nobody reads a pipe while wait4 waits
        started = time.perf_counter()
        with log.open("wb") as stderr:
            process = subprocess.Popen(command, cwd=notebook.parent, stdout=subprocess.DEVNULL, stderr=stderr)
            _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - started
        if status != 0:
            raise SystemExit(f"{notebook.name} raised: {log.read_text(errors='replace')[-2000:]}")
    return {"notebook": notebook.stem, "peak_mib": round(usage.ru_maxrss / 1024), "cpu_s": round(
        usage.ru_utime + usage.ru_stime, 1), "wall_s": round(wall, 1)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notebooks", nargs="*", default=[f"0{i}" for i in range(8)], help="ids (default 00-07)")
    args = parser.parse_args()
    notebooks = [next((ROOT / "notebooks").glob(f"{n}_*.ipynb")) for n in args.notebooks]
    rows = [measure(notebook) for notebook in notebooks]
    machine = f"{common.machine()}, COURSE_THREADS={os.environ.get('COURSE_THREADS', 'the default')}"
    command = "python benchmarks/class_server.py " + " ".join(sys.argv[1:])
    (RESULTS / "class_server.json").write_text(json.dumps({"command": command, "machine": machine, "rows": rows},
                                                          indent=1) + "\n")
    lines = ["# A class's server: one student's core path, notebook by notebook", "",
             f"Command: `{command.strip()}`, models cached, each notebook in a fresh kernel; machine: {machine}.", "",
             "| notebook | peak memory (MiB) | CPU time (s) | wall time (s) |", "|---|---:|---:|---:|"]
    lines += [f"| {r['notebook']} | {r['peak_mib']} | {r['cpu_s']} | {r['wall_s']} |" for r in rows]
    lines += ["", f"A student holds at most {max(r['peak_mib'] for r in rows)} MiB with one kernel open at a time and "
              f"{sum(r['peak_mib'] for r in rows)} MiB with every notebook's kernel left open; the whole path costs "
              f"{sum(r['cpu_s'] for r in rows):.0f} CPU seconds."]
    (RESULTS / "class_server.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
