"""Set up the course environment and open it, or run every test: the README's two commands.

    python3 -m course_utils.bootstrap lab          # make .venv, install, check the data, open JupyterLab
    python3 -m course_utils.bootstrap lab --headless   # same, but print the URL instead of opening a browser
    python3 -m course_utils.bootstrap test         # make or reuse .venv, run unit tests, nbval on every notebook
                                                   # and, where Chromium is installed, the explorer in a browser

Standard library only: this file runs with the bare ``python3`` of a fresh machine, before anything is installed.
The environment is rebuilt only when ``requirements.txt`` or ``pyproject.toml`` change (a hash stamp in .venv).
"""
from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
VENV = REPO / ".venv"
STAMP = VENV / ".course-requirements.sha256"
SANITIZE_FILE = REPO / "tests" / "nbval_sanitize.cfg"
BROWSER_CHECK = REPO / "tests" / "browser" / "run_explorer_check.py"


def venv_python() -> Path:
    """Path of the environment's interpreter (POSIX and Windows layouts)."""
    windows = VENV / "Scripts" / "python.exe"
    return windows if windows.exists() else VENV / "bin" / "python"


def requirements_hash() -> str:
    """Hash of everything that decides what is installed."""
    digest = hashlib.sha256()
    for name in ("requirements.txt", "pyproject.toml"):
        digest.update((REPO / name).read_bytes())
    return digest.hexdigest()


def run(command: list[str | Path], **kwargs) -> None:
    """Run a command, echoing it; stop with its exit code if it fails."""
    print("+", " ".join(str(part) for part in command), flush=True)
    result = subprocess.run([str(part) for part in command], cwd=REPO, **kwargs)
    if result.returncode != 0:
        sys.exit(result.returncode)


def ensure_environment() -> Path:
    """Create .venv and install the pinned requirements plus the package (editable), if not done already."""
    if sys.version_info < (3, 11):
        sys.exit(f"Python 3.11 or newer is needed, this is {sys.version.split()[0]}: run the command with python3.11.")
    if not venv_python().exists():
        print(f"Creating the course environment in {VENV.relative_to(REPO)}/ ...", flush=True)
        venv.EnvBuilder(with_pip=True).create(VENV)
    wanted = requirements_hash()
    if not STAMP.exists() or STAMP.read_text().strip() != wanted:
        python = venv_python()
        run([python, "-m", "pip", "install", "--quiet", "-r", "requirements.txt"])
        run([python, "-m", "pip", "install", "--quiet", "--no-deps", "-e", "."])
        STAMP.write_text(wanted + "\n")
    else:
        print("Course environment is up to date (.venv).", flush=True)
    return venv_python()


def open_lab(headless: bool, port: int) -> None:
    """Check (or fetch) the corpus, then start JupyterLab on notebooks/."""
    python = ensure_environment()
    check = subprocess.run([str(python), "-m", "course_utils", "data", "check", "--download"], cwd=REPO)
    if check.returncode != 0:
        print("The corpus is not ready yet (see above); the notebooks will say the same until it is.", flush=True)
    command = [python, "-m", "jupyter", "lab", "--notebook-dir", "notebooks", "--port", str(port)]
    if headless:
        command += ["--no-browser", "--ip", "127.0.0.1"]
        print("Headless: open the http://127.0.0.1:... URL that JupyterLab prints below in a browser.", flush=True)
    os.chdir(REPO)
    os.execv(str(python), [str(part) for part in command])


def run_tests(pytest_args: list[str]) -> None:
    """The explorer in a browser (where Chromium exists), then unit tests and every notebook under nbval in one
    pytest run (NBVAL_CHECK_OUTPUT cells are compared).

    Notebooks run in the fast mode (COURSE_FAST=1: short training) unless the caller sets COURSE_FAST=0.
    """
    python = ensure_environment()
    run_browser_check(python)  # first, so that pytest's summary is the run's last line
    run([python, "-m", "pytest", "tests", "notebooks", "--nbval-lax",
         "--nbval-sanitize-with", SANITIZE_FILE.relative_to(REPO), "--nbval-cell-timeout", "900", *pytest_args],
        env={**os.environ, "COURSE_FAST": os.environ.get("COURSE_FAST", "1")})


def run_browser_check(python: Path) -> None:
    """The explorer in a real browser (JupyterLab + headless Chromium), when Chromium and chromedriver exist.

    COURSE_BROWSER_CHECK=1 (set by CI) makes a missing browser an error instead of a note.
    """
    have_browser = shutil.which("chromium") and shutil.which("chromedriver")
    if not have_browser:
        if os.environ.get("COURSE_BROWSER_CHECK") == "1":
            sys.exit("COURSE_BROWSER_CHECK=1 but chromium/chromedriver are missing: "
                     "apt-get install -y chromium chromium-driver")
        print("Browser check of the explorer not run: no chromium/chromedriver "
              "(apt-get install -y chromium chromium-driver; see tests/browser/run_explorer_check.py).", flush=True)
        return
    run([python, BROWSER_CHECK])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python3 -m course_utils.bootstrap", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    lab = sub.add_parser("lab", help="set up the environment and open the course in JupyterLab")
    lab.add_argument("--headless", action="store_true", help="do not open a browser; print the URL")
    lab.add_argument("--port", type=int, default=8888)
    test = sub.add_parser("test", help="set up the environment and run every test, notebooks included")
    test.add_argument("pytest_args", nargs=argparse.REMAINDER, help="extra arguments passed to pytest")
    args = parser.parse_args(argv)
    if args.command == "lab":
        open_lab(args.headless, args.port)
    else:
        run_tests(args.pytest_args)


if __name__ == "__main__":
    main()
