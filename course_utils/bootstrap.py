"""Set up the course environment and open it, or run every test: the README's two commands.

    python3 -m course_utils.bootstrap lab              # make .venv, install, check the data, open JupyterLab
    python3 -m course_utils.bootstrap lab --headless   # same, but no browser: open the URL JupyterLab prints
    python3 -m course_utils.bootstrap lab --ip 0.0.0.0 -- --ServerApp.token=secret   # after --: for JupyterLab
    python3 -m course_utils.bootstrap test             # make or reuse .venv, run unit tests, nbval on every notebook
                                                       # and, where Chromium is installed, the browser checks
    python3 -m course_utils.bootstrap test -x -k attention   # arguments after `test` go to pytest

Standard library only: this file runs with the bare ``python3`` of a fresh machine, before anything is installed.
The environment is rebuilt only when ``requirements.txt`` or ``pyproject.toml`` change (a hash stamp in .venv).
Mistakes (a missing ensurepip, a failed install, a bad option) end with a one-line error and exit status 1 or 2;
`test` exits with pytest's status, and says so in one line when that is 5 (no tests collected).
"""
from __future__ import annotations

import argparse
import hashlib
import importlib.util
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
VENV = REPO / ".venv"
STAMP_NAME = ".course-requirements.sha256"
SANITIZE_FILE = REPO / "tests" / "nbval_sanitize.cfg"
BROWSER_CHECK = REPO / "tests" / "browser" / "run_explorer_check.py"
SITE_CHECK = REPO / "tests" / "browser" / "run_site_check.py"
PYTEST_NO_TESTS = 5  # pytest's exit status when nothing was collected


class BootstrapError(Exception):
    """A problem the user can fix; main() prints it as one line and exits with `status`."""

    def __init__(self, message: str, status: int = 1):
        super().__init__(message)
        self.status = status


def venv_python() -> Path:
    """Path of the environment's interpreter (POSIX and Windows layouts)."""
    windows = VENV / "Scripts" / "python.exe"
    return windows if windows.exists() else VENV / "bin" / "python"


def requirements_hash() -> str:
    """Hash of everything that decides what is installed."""
    digest = hashlib.sha256()
    for name in ("requirements.txt", "pyproject.toml"):
        path = REPO / name
        if not path.is_file():
            raise BootstrapError(f"{path} not found: run this command from a clone of the course repository")
        digest.update(path.read_bytes())
    return digest.hexdigest()


def run(command: list[str | Path], what: str) -> None:
    """Run a command in the repository, echoing it; raise BootstrapError (status 1) naming `what` if it fails."""
    print("+", " ".join(str(part) for part in command), flush=True)
    result = subprocess.run([str(part) for part in command], cwd=REPO)
    if result.returncode != 0:
        raise BootstrapError(f"{what} failed (exit status {result.returncode}); see the messages above")


def create_venv() -> None:
    """Create .venv with pip, or explain in one line why it cannot be done (and leave no half-made .venv)."""
    if importlib.util.find_spec("ensurepip") is None:
        raise BootstrapError(f"{sys.executable} cannot create a virtual environment with pip (no ensurepip module): "
                             f"on Debian/Ubuntu run `apt-get install python3-venv` (or python{sys.version_info[0]}."
                             f"{sys.version_info[1]}-venv), then run this command again")
    print(f"Creating the course environment in {VENV}/ ...", flush=True)
    try:
        venv.EnvBuilder(with_pip=True).create(VENV)
    except (subprocess.CalledProcessError, OSError) as error:
        shutil.rmtree(VENV, ignore_errors=True)
        raise BootstrapError(f"could not create {VENV} ({error}): on Debian/Ubuntu `apt-get install python3-venv` "
                             "usually fixes this; check free disk space and write permission otherwise") from None


def ensure_environment() -> Path:
    """Create .venv and install the pinned requirements plus the package (editable), if not done already."""
    if sys.version_info < (3, 11):  # noqa: UP036 (the bare python3 that runs this file may be older)
        raise BootstrapError(f"Python 3.11 or newer is needed, this is {sys.version.split()[0]}: "
                             "run the command with python3.11 (or newer)")
    wanted = requirements_hash()
    if not venv_python().exists():
        create_venv()
    stamp = VENV / STAMP_NAME
    if not stamp.exists() or stamp.read_text().strip() != wanted:
        python = venv_python()
        run([python, "-m", "pip", "install", "--quiet", "-r", "requirements.txt"], "installing requirements.txt")
        run([python, "-m", "pip", "install", "--quiet", "--no-deps", "-e", "."], "installing course_utils")
        stamp.write_text(wanted + "\n")
    else:
        print("Course environment is up to date (.venv).", flush=True)
    return venv_python()


def corpus_check_command(python: Path) -> list[str]:
    """The command that finds (downloading if nothing is found) and verifies the corpus."""
    return [str(python), "-m", "course_utils", "data", "check"]


def is_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


def lab_command(python: Path, headless: bool, ip: str, port: int, jupyter_args: list[str]) -> list[str]:
    """The JupyterLab command line: notebooks/ as its root, --allow-root as root, `jupyter_args` last."""
    command = [str(python), "-m", "jupyter", "lab", f"--notebook-dir={REPO / 'notebooks'}", f"--ip={ip}",
               f"--port={port}"]
    if headless:
        command.append("--no-browser")
    if is_root():
        command.append("--allow-root")
    return command + list(jupyter_args)


def open_lab(headless: bool, ip: str, port: int, jupyter_args: list[str]) -> None:
    """Check (or fetch) the corpus, then replace this process with JupyterLab on notebooks/."""
    python = ensure_environment()
    check = subprocess.run(corpus_check_command(python), cwd=REPO)
    if check.returncode != 0:
        print("The corpus is not ready yet (see above); the notebooks will say the same until it is.", flush=True)
    command = lab_command(python, headless, ip, port, jupyter_args)
    if is_root():
        print("Running as root (a container?): passing --allow-root to JupyterLab.", flush=True)
    if headless:
        host = "127.0.0.1" if ip in ("0.0.0.0", "::", "") else ip
        print(f"Headless: no browser is opened. Open the URL that JupyterLab prints below, in the lines after "
              f"'copy and paste one of these URLs': http://{host}:{port}/lab?token=... (it picks the next free port "
              f"if {port} is taken; the printed line is always right).", flush=True)
        if ip in ("0.0.0.0", "::"):
            print(f"--ip {ip}: from outside this machine or container use its address (or the host's mapped port) "
                  "in place of 127.0.0.1, with the same token.", flush=True)
    print("+", " ".join(command), flush=True)
    os.chdir(REPO)
    os.execv(command[0], command)


def run_tests(pytest_args: list[str]) -> None:
    """The browser checks (where Chromium exists), ruff over the tree, then unit tests and every notebook under
    nbval in one pytest run, the notebooks in the fast mode (COURSE_FAST=1) unless the caller sets COURSE_FAST=0.
    Collecting nothing (pytest's status 5) is never a pass."""
    python = ensure_environment()
    run_browser_check(python)  # first, so that pytest's summary is the run's last line
    run([python, "-m", "ruff", "check", "."], "ruff (the lint configured in pyproject.toml)")
    command = [str(python), "-m", "pytest", "tests", "notebooks", "--nbval-lax",
               "--nbval-sanitize-with", str(SANITIZE_FILE.relative_to(REPO)), "--nbval-cell-timeout", "900",
               *pytest_args]
    print("+", " ".join(command), flush=True)
    result = subprocess.run(command, cwd=REPO, env={**os.environ, "COURSE_FAST": os.environ.get("COURSE_FAST", "1")})
    if result.returncode == PYTEST_NO_TESTS:
        raise BootstrapError("pytest collected no tests (exit status 5): check the -k/-m expression or the paths "
                             "given after `test`", PYTEST_NO_TESTS)
    if result.returncode != 0:
        sys.exit(result.returncode)  # pytest's own summary above says what failed


def run_browser_check(python: Path) -> None:
    """Where Chromium and chromedriver exist: the explorer in JupyterLab started by `lab --headless` (the README's
    command), then the offline site built by `python -m tools.site`, both in headless Chromium.
    COURSE_BROWSER_CHECK=1 (set by CI) makes a missing browser an error instead of a note."""
    have_browser = shutil.which("chromium") and shutil.which("chromedriver")
    if not have_browser:
        if os.environ.get("COURSE_BROWSER_CHECK") == "1":
            raise BootstrapError("COURSE_BROWSER_CHECK=1 but chromium/chromedriver are missing: "
                                 "apt-get install -y chromium chromium-driver")
        print("Browser checks of the explorer and the offline site not run: no chromium/chromedriver "
              "(apt-get install -y chromium chromium-driver; see tests/browser/run_explorer_check.py).", flush=True)
        return
    run([python, BROWSER_CHECK], "the browser check of the explorer")
    run([python, SITE_CHECK], "the browser check of the offline site (python -m tools.site)")


def port_number(text: str) -> int:
    """argparse type: a TCP port, 1-65535."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 1 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"port must lie in 1-65535, got {port}")
    return port


def build_parser() -> argparse.ArgumentParser:
    """The parser of the two commands (main() splits off what goes to JupyterLab or pytest before parsing)."""
    parser = argparse.ArgumentParser(prog="python3 -m course_utils.bootstrap", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True, metavar="{lab,test}")
    lab = sub.add_parser("lab", help="set up the environment and open the course in JupyterLab",
                         usage="%(prog)s [--headless] [--ip IP] [--port PORT] [-- JUPYTERLAB ARGS...]")
    lab.add_argument("--headless", action="store_true", help="do not open a browser; open the URL JupyterLab prints")
    lab.add_argument("--ip", default="127.0.0.1",
                     help="address to listen on (default 127.0.0.1; in a container use 0.0.0.0)")
    lab.add_argument("--port", type=port_number, default=8888, help="port (default 8888; the next free one if taken)")
    sub.add_parser("test", help="set up the environment and run every test, notebooks included; "
                   "the arguments after `test` go to pytest", usage="%(prog)s [PYTEST ARGS...]")
    return parser


def parse(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    """Parse the bootstrap's own options; returns them and the arguments for JupyterLab (lab) or pytest (test).

    `lab`: everything after the first `--` goes to JupyterLab unchanged; anything else unknown is an error.
    `test`: everything after `test` goes to pytest unchanged (a leading `--` is dropped), except a lone -h/--help.
    """
    parser = build_parser()
    if argv[:1] == ["test"] and argv[1:] not in (["-h"], ["--help"]):
        passed = argv[1:]
        return parser.parse_args(["test"]), passed[1:] if passed[:1] == ["--"] else passed
    cut = argv.index("--") if "--" in argv else len(argv)
    args, unknown = parser.parse_known_args(argv[:cut])
    if unknown:
        parser.error(f"unrecognized arguments: {' '.join(unknown)} (options for JupyterLab go after --, "
                     f"e.g. lab -- {unknown[0]})")
    return args, argv[cut + 1:]


def main(argv: list[str] | None = None) -> None:
    """Run a command (argv: default sys.argv[1:])."""
    args, passed = parse(sys.argv[1:] if argv is None else list(argv))
    try:
        if args.command == "lab":
            open_lab(args.headless, args.ip, args.port, passed)
        else:
            run_tests(passed)
    except BootstrapError as error:
        print(f"error: {error}", file=sys.stderr, flush=True)
        sys.exit(error.status)
    except KeyboardInterrupt:
        print("\ninterrupted", file=sys.stderr, flush=True)
        sys.exit(130)


if __name__ == "__main__":
    main()
