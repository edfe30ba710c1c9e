"""Set up the course environment and open it, or run every test: the README's two commands.

`python3 -m course_utils.bootstrap lab [--headless] [--ip IP] [--port PORT] [-- JUPYTERLAB ARGS...]` or `test
[PYTEST ARGS...]`. Standard library only: it runs with the bare python3 of a fresh machine. .venv is reinstalled
only when requirements.txt or pyproject.toml change. A mistake ends with one error line (status 1 or 2); `test`
exits with pytest's status.
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
LAB_CHECK = REPO / "tests" / "browser" / "run_lab_check.py"  # the attention lab against PyTorch (tools/site/lab)
PYTEST_NO_TESTS = 5  # pytest's exit status when nothing was collected


class BootstrapError(Exception):
    """A problem the user can fix; main() prints it as one line and exits with `status`."""
    def __init__(self, message: str, status: int = 1):
        super().__init__(message)
        self.status = status


def venv_python() -> Path:
    """The environment's interpreter (POSIX and Windows layouts)."""
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


def run(command: list[str | Path], what: str | None, **options) -> int:
    """Run a command in the repository, echoing it; its exit status, or BootstrapError naming `what` if that fails."""
    print("+", " ".join(str(part) for part in command), flush=True)
    status = subprocess.run([str(part) for part in command], cwd=REPO, **options).returncode
    if status != 0 and what is not None:
        raise BootstrapError(f"{what} failed (exit status {status}); see the messages above")
    return status


def create_venv() -> None:
    """Create .venv with pip, or explain in one line why not (leaving no half-made .venv)."""
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
    """Create .venv and install the pinned requirements plus the package (editable), unless already done."""
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


def open_lab(headless: bool, ip: str, port: int, jupyter_args: list[str]) -> None:
    """Check (or fetch) the corpus, then replace this process with JupyterLab on notebooks/."""
    python = ensure_environment()
    if subprocess.run([str(python), "-m", "course_utils", "data", "check"], cwd=REPO).returncode != 0:
        print("The corpus is not ready yet (see above); the notebooks will say the same until it is.", flush=True)
    command = [str(python), "-m", "jupyter", "lab", f"--notebook-dir={REPO / 'notebooks'}", f"--ip={ip}",
               f"--port={port}", *(["--no-browser"] if headless else [])]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        command.append("--allow-root")
        print("Running as root (a container?): passing --allow-root to JupyterLab.", flush=True)
    command += jupyter_args
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


def _fast_unless_set() -> dict[str, str]:
    """The environment with COURSE_FAST=1 unless the caller set COURSE_FAST: what the test command runs in."""
    return {**os.environ, "COURSE_FAST": os.environ.get("COURSE_FAST", "1")}


def run_tests(pytest_args: list[str]) -> None:
    """The browser checks, ruff, then unit tests and every notebook under nbval in one pytest run (COURSE_FAST=1
    unless the caller sets it). Collecting nothing (pytest's status 5) is never a pass."""
    python = ensure_environment()
    run_browser_check(python)  # first, so that pytest's summary is the run's last line
    run([python, "-m", "ruff", "check", "."], "ruff (the lint configured in pyproject.toml)")
    status = run([python, "-m", "pytest", "tests", "notebooks", "--nbval-lax", "--nbval-sanitize-with",
                  str(SANITIZE_FILE.relative_to(REPO)), "--nbval-cell-timeout", "900", *pytest_args], None,
                 env=_fast_unless_set())
    if status == PYTEST_NO_TESTS:
        raise BootstrapError("pytest collected no tests (exit status 5): check the -k/-m expression or the paths "
                             "given after `test`", PYTEST_NO_TESTS)
    if status != 0:
        sys.exit(status)  # pytest's own summary above says what failed


def run_browser_check(python: Path) -> None:
    """Where Chromium and chromedriver exist: the explorer in JupyterLab (`lab --headless`), the offline site and the
    attention lab (the fast-mode model unless COURSE_FAST says otherwise, as pytest), in headless Chromium.
    COURSE_BROWSER_CHECK=1 (CI) makes a missing browser an error instead of a note."""
    if not (shutil.which("chromium") and shutil.which("chromedriver")):
        if os.environ.get("COURSE_BROWSER_CHECK") == "1":
            raise BootstrapError("COURSE_BROWSER_CHECK=1 but chromium/chromedriver are missing: "
                                 "apt-get install -y chromium chromium-driver")
        print("Browser checks of the explorer and the offline site not run (nor the attention lab's): no chromium/"
              "chromedriver (apt-get install -y chromium chromium-driver; see tests/browser/run_explorer_check.py).",
              flush=True)
        return
    run([python, BROWSER_CHECK], "the browser check of the explorer")
    run([python, SITE_CHECK], "the browser check of the offline site (python -m tools.site)")
    run([python, LAB_CHECK], "the browser check of the attention lab (python -m tools.site.lab)",
        env=_fast_unless_set())


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
    """The parser of the two commands (parse() splits off what goes to JupyterLab or pytest first)."""
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
    """The bootstrap's own options and the arguments for JupyterLab (lab: all after the first `--`) or pytest (test:
    all after `test`, a leading `--` dropped, except a lone -h/--help)."""
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
