"""A learner's run of the whole course under non-default conditions: pretrain, then every notebook top to bottom in
full mode, each in a fresh kernel; lists every cell that raises.

    python benchmarks/learner_run.py                                      # every notebook, the course's defaults
    python benchmarks/learner_run.py --seed 1 --corpus derived            # another seed, a corpus never seen before
    python benchmarks/learner_run.py --device cpu --threads 2 --notebooks 04 06 --report /tmp/learner.json
    python benchmarks/learner_run.py --fast --notebooks 01 06             # smoke test of this script (minutes)

Conditions: --seed N (COURSE_SEED: every model the course trains), --corpus mirror|derived|PATH (mirror: the corpus
the course finds, $COURSE_CORPUS or data/eng-fra.txt; derived: that corpus less a seeded seventh of its lines,
tests/test_derived_corpus.py; PATH: that file), --device auto|cpu|cuda (where the translators train: the package's
TrainConfig.device is "auto", CUDA when present, so cpu hides the GPUs with CUDA_VISIBLE_DEVICES=; notebook 08's
classifiers always train on the CPU), --threads N (COURSE_THREADS), --workdir DIR (COURSE_DATA_DIR=DIR/data; default
a new temporary folder, so no cached model is reused). Full mode: COURSE_FAST is removed (--fast sets it to 1).

Steps: `python -m course_utils pretrain` in a subprocess (the five lecture models and notebook 08's classifiers; its
wall time and exit status are recorded; --skip-pretrain leaves the training to the notebooks), then each notebook
with nbclient (cwd notebooks/, allow_errors so that one raising cell hides no later one, --cell-timeout per cell);
the executed copies go to WORKDIR/executed/, never back into notebooks/. Cell numbers are 0-based: the cell's index
in the .ipynb and, in brackets, its index among code cells (as nbval numbers its items, `::Cell 36`):

    06_heatmaps cell 59 (code 36): AssertionError: ...

The table at the end gives per notebook the cells run, the cells raising and the seconds, with the conditions (seed,
corpus with its line count and sha256 prefix, device, torch, threads, machine); --report writes all of it as JSON.
Exit status 0 when pretrain succeeded and no cell raised, 1 otherwise, 2 for a bad option.

A later run with the same --workdir reuses the models cached there (and the derived corpus), so a run cut off by a
time limit can be continued: the same command again (pretrain skips the models already trained), or
--skip-pretrain with the notebooks still to run.

On a GPU machine without Jupyter
    Bring the repository there with the wheels of `.whl/` (nbclient, ipykernel, ipywidgets and the dependencies
    such a machine lacks, for CPython 3.12 on manylinux x86_64; git ignores the folder) and a corpus the course
    finds ($COURSE_CORPUS or data/eng-fra.txt), and run from the repository root:

    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || exit; python3 benchmarks/learner_run.py --device cuda --seed 1 --corpus derived --workdir /tmp/learner-run --report /tmp/learner-run/report.json

    The wheels assume the machine has torch, numpy, matplotlib (with python-dateutil, packaging), pygments, psutil,
    attrs, typing-extensions and pytest. The kernel is jupyter_client's native "python3" spec: this interpreter
    with `-m ipykernel_launcher`, started with this script's environment, so it inherits PYTHONPATH (/tmp/site), to
    which the script adds the repository root: course_utils needs no installing.
"""  # noqa: E501 (the command above is one line, to be pasted as it is)
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
sys.path.insert(0, str(ROOT / "benchmarks"))
if str(ROOT) not in sys.path:
    sys.path.insert(1, str(ROOT))  # course_utils without installing it
from common import machine, table  # noqa: E402

KERNEL = "python3"  # jupyter_client's native spec: this interpreter with ipykernel_launcher
COURSE_VARIABLES = ("COURSE_DATA_DIR", "COURSE_CORPUS", "COURSE_SEED", "COURSE_THREADS", "COURSE_FAST")


# ------------------------------------------------------------------------------------------------------ options
def corpus_choice(value: str) -> str:
    """--corpus: mirror, derived, or an existing file."""
    if value in ("mirror", "derived") or Path(value).expanduser().is_file():
        return value
    raise argparse.ArgumentTypeError(f"{value!r} is neither mirror, derived nor an existing corpus file")


def positive(value: str) -> int:
    number = int(value)
    if number < 1:
        raise argparse.ArgumentTypeError(f"{value} is not a positive whole number")
    return number


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, default=None, help="COURSE_SEED (default: each model's own seed)")
    parser.add_argument("--corpus", type=corpus_choice, default="mirror", help="mirror (default), derived or a PATH")
    parser.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto",
                        help="where pretrain and the notebooks train (auto: the GPU when present)")
    parser.add_argument("--threads", type=positive, default=None, help="COURSE_THREADS (default: the package's)")
    parser.add_argument("--workdir", type=Path, default=None, help="COURSE_DATA_DIR=WORKDIR/data, executed notebooks, "
                        "logs (default: a new temporary folder)")
    parser.add_argument("--notebooks", nargs="+", default=None, metavar="NN",
                        help="e.g. 04 06 or 06_heatmaps (default: every notebooks/*.ipynb)")
    parser.add_argument("--skip-pretrain", action="store_true", help="no pretrain: the notebooks train what they load")
    parser.add_argument("--fast", action="store_true", help="COURSE_FAST=1: a quick smoke test of this script")
    parser.add_argument("--cell-timeout", type=positive, default=3600, help="seconds per cell (default 3600)")
    parser.add_argument("--report", type=Path, default=None, help="write the full report as JSON here")
    return parser


def parse_args(argv=None) -> argparse.Namespace:
    """The options, checked: unknown notebooks and --device cuda without a GPU exit with status 2 (argparse)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        args.notebook_paths = select_notebooks(args.notebooks)
    except ValueError as error:
        parser.error(str(error))
    if args.device == "cuda":
        import torch
        if not torch.cuda.is_available():
            parser.error("--device cuda, but no CUDA GPU is visible here: use --device auto or cpu")
    return args


def select_notebooks(names: list[str] | None, folder: Path = NOTEBOOKS) -> list[Path]:
    """notebooks/*.ipynb whose name starts with one of `names` ("04", "06_heatmaps"), every one for None."""
    every = sorted(folder.glob("*.ipynb"))
    if names is None:
        return every
    chosen = []
    for name in names:
        matches = [path for path in every if path.stem.startswith(name.removesuffix(".ipynb"))]
        if len(matches) != 1:
            raise ValueError(f"--notebooks {name}: {'no' if not matches else 'more than one'} notebook matches "
                             f"(choose among {', '.join(path.stem[:2] for path in every)})")
        chosen += [path for path in matches if path not in chosen]
    return chosen


# -------------------------------------------------------------------------------------------------- conditions
def prepare_corpus(choice: str, workdir: Path) -> Path:
    """The corpus file for --corpus: mirror (what the course finds, never a download), derived (written into
    `workdir` from that one, unless an earlier run did) or the PATH given. Raises CorpusError when the course finds
    none."""
    from course_utils import corpus

    if choice not in ("mirror", "derived"):
        return Path(choice).expanduser().resolve()
    found = corpus.find_corpus(download=False).resolve()
    if choice == "mirror":
        return found
    sys.path.insert(0, str(ROOT / "tests"))
    try:
        from test_derived_corpus import write_derived_corpus
    finally:
        sys.path.remove(str(ROOT / "tests"))
    target = workdir / "derived-eng-fra.zip"
    if not target.is_file():  # a later run in the same --workdir reads the same derived corpus
        write_derived_corpus(found, target)
    return target


def build_env(args: argparse.Namespace, workdir: Path, corpus_path: Path, base=None) -> dict[str, str]:
    """The environment of pretrain and of every kernel: `base` (default os.environ) with the course's variables
    replaced by the conditions, MPLBACKEND=Agg, the repository on PYTHONPATH, and the GPUs hidden for --device cpu."""
    env = {key: value for key, value in (os.environ if base is None else base).items()
           if key not in COURSE_VARIABLES}
    env.update(COURSE_DATA_DIR=str(workdir / "data"), COURSE_CORPUS=str(corpus_path), MPLBACKEND="Agg")
    if args.seed is not None:
        env["COURSE_SEED"] = str(args.seed)
    if args.threads is not None:
        env["COURSE_THREADS"] = str(args.threads)
    if args.fast:
        env["COURSE_FAST"] = "1"
    if args.device == "cpu":
        env["CUDA_VISIBLE_DEVICES"] = ""
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH")])])
    return env


def describe_conditions(args: argparse.Namespace, workdir: Path, corpus_path: Path) -> dict:
    """Seed, corpus (lines, sha256 prefix, known or not), device, torch, threads, machine: the report's head."""
    import torch

    from course_utils import corpus
    from course_utils.runtime import default_threads

    info = corpus.check_corpus(corpus_path)
    if args.device == "cpu" or not torch.cuda.is_available():
        device = "cpu" + (" (CUDA_VISIBLE_DEVICES= for pretrain and the kernels)" if torch.cuda.is_available() else "")
    else:
        device = f"cuda ({torch.cuda.get_device_name()})"
    return dict(seed=args.seed if args.seed is not None else "default (each model's own)",
                corpus=dict(choice=args.corpus, path=str(corpus_path), lines=info.lines, sha256=info.sha256[:12],
                            known=info.known.description if info.known else None),
                device=device, torch=torch.__version__, python=sys.version.split()[0],
                threads=args.threads if args.threads is not None else f"default ({default_threads()})",
                mode="fast (COURSE_FAST=1)" if args.fast else "full", machine=machine(), workdir=str(workdir),
                cell_timeout=args.cell_timeout)


# --------------------------------------------------------------------------------------------------- pretrain
def run_pretrain(env: dict[str, str], log_path: Path) -> dict:
    """`python -m course_utils pretrain` with `env`, its lines echoed and kept in `log_path`: status, seconds."""
    command = [sys.executable, "-m", "course_utils", "pretrain", "--no-progress"]
    log_path.parent.mkdir(parents=True, exist_ok=True)
    print("$ " + " ".join(command[1:]), flush=True)
    started = time.perf_counter()
    with log_path.open("w") as log, subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                                                     stderr=subprocess.STDOUT, text=True) as process:
        for line in process.stdout:
            print("    " + line, end="", flush=True)
            log.write(line)
    seconds = time.perf_counter() - started
    status = "ok" if process.returncode == 0 else "failed"
    return dict(status=status, exit_status=process.returncode, seconds=round(seconds, 1), log=str(log_path))


# -------------------------------------------------------------------------------------------------- notebooks
def first_line(text: str) -> str:
    lines = str(text).strip().splitlines()
    return lines[0].strip() if lines else ""


def cell_errors(nb, name: str) -> list[dict]:
    """One record per error output of an executed notebook: the cell's index in the .ipynb, its index among code
    cells (both 0-based), the exception's name and the first line of its message."""
    errors, code = [], -1
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        code += 1
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error":
                errors.append(dict(notebook=name, cell=index, code_cell=code, ename=output.get("ename", "?"),
                                   message=first_line(output.get("evalue", "")),
                                   expected="raises-exception" in cell.metadata.get("tags", [])))
    return errors


def execute_notebook(path: Path, env: dict[str, str], output_dir: Path, cell_timeout: int = 3600) -> dict:
    """Run notebook `path` top to bottom in a fresh kernel (cwd: its folder, environment `env`, errors allowed) and
    write the executed copy into `output_dir`. Returns cells, code cells run, raising cells, seconds, the errors,
    and `aborted` (why the run stopped early: a dead kernel, ...; None when every cell ran)."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, kernel_name=KERNEL, timeout=cell_timeout, interrupt_on_timeout=True,
                            allow_errors=True, resources={"metadata": {"path": str(path.parent)}})
    aborted, started = None, time.perf_counter()
    try:
        client.execute(env=env)
    except Exception as error:  # a dead kernel, a kernel that never started: say so and go on
        aborted = f"{type(error).__name__}: {first_line(error) or repr(error)}"
    seconds = time.perf_counter() - started
    output_dir.mkdir(parents=True, exist_ok=True)
    executed = output_dir / path.name
    nbformat.write(nb, executed)
    errors = cell_errors(nb, path.stem)
    code_cells = [cell for cell in nb.cells if cell.cell_type == "code" and cell.source.strip()]
    return dict(notebook=path.stem, cells=len(nb.cells), code_cells=len(code_cells),
                ran=sum(cell.get("execution_count") is not None for cell in code_cells),
                raising=len({error["cell"] for error in errors if not error["expected"]}),
                seconds=round(seconds, 1), errors=errors, aborted=aborted, executed=str(executed))


# ------------------------------------------------------------------------------------------------------ report
def error_line(error: dict) -> str:
    """`06_heatmaps cell 59 (code 36): AssertionError: message`."""
    message = f": {error['message']}" if error["message"] else ""
    expected = " (expected: tagged raises-exception)" if error["expected"] else ""
    timeout = " (interrupted: ran past --cell-timeout?)" if error["ename"] == "KeyboardInterrupt" else ""
    return (f"{error['notebook']} cell {error['cell']} (code {error['code_cell']}): "
            f"{error['ename']}{message}{expected}{timeout}")


def summary(report: dict) -> str:
    """The compact table printed at the end: raising cells, then one row per notebook, then the conditions."""
    lines = ["", "cells that raised:"]
    errors = [error for result in report["notebooks"] for error in result["errors"]]
    lines += [f"  {error_line(error)}" for error in errors] or ["  none"]
    lines += [f"  {result['notebook']}: stopped early: {result['aborted']}"
              for result in report["notebooks"] if result["aborted"]]
    rows = [[result["notebook"], f"{result['ran']}/{result['code_cells']}", str(result["raising"]),
             f"{result['seconds']:.0f}"] for result in report["notebooks"]]
    pretrain = report["pretrain"]
    pretrain_row = ["pretrain", pretrain["status"], "" if pretrain["status"] == "skipped" else
                    f"exit {pretrain['exit_status']}", f"{pretrain.get('seconds', 0):.0f}"]
    lines += ["", table([pretrain_row] + rows, ["step", "cells run", "raising", "seconds"]), ""]
    conditions = report["conditions"]
    corpus = conditions["corpus"]
    lines += [f"seed {conditions['seed']}; corpus {corpus['choice']}: {corpus['path']} ({corpus['lines']:,} lines, "
              f"sha256 {corpus['sha256']}...{', ' + corpus['known'] if corpus['known'] else ', not a known corpus'})",
              f"device {conditions['device']}; torch {conditions['torch']}; threads {conditions['threads']}; "
              f"mode {conditions['mode']}",
              f"machine: {conditions['machine']}",
              f"verdict: {'OK' if report['ok'] else 'FAILED'} (executed notebooks in {conditions['workdir']})"]
    return "\n".join(lines)


def passed(report: dict) -> bool:
    """Pretrain succeeded (or was skipped), every notebook ran to its end, and no cell raised unexpectedly."""
    return (report["pretrain"]["status"] in ("ok", "skipped")
            and all(result["raising"] == 0 and not result["aborted"] for result in report["notebooks"]))


# -------------------------------------------------------------------------------------------------------- main
def main(argv=None) -> int:
    args = parse_args(argv)
    workdir = (args.workdir or Path(tempfile.mkdtemp(prefix="learner-run-"))).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    from course_utils.corpus import CorpusError
    try:
        corpus_path = prepare_corpus(args.corpus, workdir)
        conditions = describe_conditions(args, workdir, corpus_path)
    except CorpusError as error:
        print(f"error: {first_line(error)}", file=sys.stderr)
        return 2
    env = build_env(args, workdir, corpus_path)
    cached = sorted((workdir / "data" / "models").glob("*.pt"))
    print(f"learner run in {workdir}" + (f" ({len(cached)} model(s) already cached there are reused)"
                                         if cached else ""), flush=True)
    pretrain = (dict(status="skipped") if args.skip_pretrain
                else run_pretrain(env, workdir / "logs" / "pretrain.log"))
    results = []
    for path in args.notebook_paths:
        print(f"running {path.name} ...", flush=True)
        results.append(execute_notebook(path, env, workdir / "executed", args.cell_timeout))
        for error in results[-1]["errors"]:
            print(f"    {error_line(error)}", flush=True)
    report = dict(conditions=conditions, pretrain=pretrain, notebooks=results,
                  errors=[error for result in results for error in result["errors"]])
    report["ok"] = passed(report)
    print(summary(report))
    if args.report:
        args.report.parent.mkdir(parents=True, exist_ok=True)
        args.report.write_text(json.dumps(report, indent=1) + "\n")
        print(f"report: {args.report}")
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
