"""Tests for course_utils.bootstrap, the README's two commands, through its real argument parser.

subprocess.run, os.execv and os.chdir are replaced by recorders, so nothing is installed or started; the commands
the bootstrap would run are checked against the real parsers of `python -m course_utils` and of JupyterLab.
The last tests check, offline, that an environment which already holds another torch (Colab) keeps it.
"""
import importlib.util
import json
import subprocess
import sys
import tomllib
import venv
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

from course_utils import bootstrap, cli
from course_utils.cli.commands import cmd_data_check

PYTHON = Path("/venv/bin/python")
REPO = Path(__file__).resolve().parent.parent


class Recorder:
    """Stands in for subprocess.run, os.execv and os.chdir; answers subprocess.run with preset exit statuses."""

    def __init__(self, statuses=None):
        self.runs, self.execs, self.statuses = [], [], dict(statuses or {})

    def run(self, command, **kwargs):
        command = [str(part) for part in command]
        self.runs.append((command, kwargs))
        status = next((code for key, code in self.statuses.items() if key in " ".join(command)), 0)
        return subprocess.CompletedProcess(command, status)

    def execv(self, path, argv):
        self.execs.append((path, list(argv)))

    def commands(self, word):
        return [command for command, _ in self.runs if word in command]


@pytest.fixture
def recorder(monkeypatch):
    """No real processes; the environment counts as ready (ensure_environment returns PYTHON)."""
    recorder = Recorder()
    monkeypatch.setattr(bootstrap.subprocess, "run", recorder.run)
    monkeypatch.setattr(bootstrap.os, "execv", recorder.execv)
    monkeypatch.setattr(bootstrap.os, "chdir", lambda path: None)
    monkeypatch.setattr(bootstrap, "ensure_environment", lambda: PYTHON)
    monkeypatch.setattr(bootstrap.os, "geteuid", lambda: 1000)
    return recorder


def lab_argv(recorder):
    assert len(recorder.execs) == 1
    path, argv = recorder.execs[0]
    assert path == argv[0] == str(PYTHON)
    assert argv[1:4] == ["-m", "jupyter", "lab"]
    return argv


# ---------------------------------------------------------------- lab: the corpus check

def test_lab_checks_the_corpus_with_a_command_the_real_cli_accepts(recorder):
    bootstrap.main(["lab", "--headless"])
    (command,) = recorder.commands("course_utils")
    assert command[:3] == [str(PYTHON), "-m", "course_utils"]
    args = cli.build_parser().parse_args(command[3:])  # exits with status 2 if the CLI does not know the command
    assert args.func is cmd_data_check
    assert args.no_download is False  # lab may download the corpus when nothing is found


def test_lab_still_opens_when_the_corpus_check_fails(recorder, capsys):
    recorder.statuses["data check"] = 1
    bootstrap.main(["lab"])
    assert "corpus is not ready" in capsys.readouterr().out
    lab_argv(recorder)


# ---------------------------------------------------------------- lab: JupyterLab's command line

def test_lab_defaults_to_localhost_8888_on_the_notebooks_folder(recorder, capsys):
    bootstrap.main(["lab"])
    argv = lab_argv(recorder)
    assert f"--notebook-dir={REPO / 'notebooks'}" in argv
    assert "--ip=127.0.0.1" in argv and "--port=8888" in argv
    assert "--no-browser" not in argv and "--allow-root" not in argv
    assert "root" not in capsys.readouterr().out


def test_lab_headless_opens_no_browser_and_names_the_url_line_to_open(recorder, capsys):
    bootstrap.main(["lab", "--headless", "--port", "9000"])
    assert "--no-browser" in lab_argv(recorder)
    out = capsys.readouterr().out
    assert "http://127.0.0.1:9000/lab?token=" in out
    assert "copy and paste one of these URLs" in out  # the words JupyterLab prints above the URL


def test_lab_as_root_passes_allow_root_and_says_so_in_one_line(recorder, monkeypatch, capsys):
    monkeypatch.setattr(bootstrap.os, "geteuid", lambda: 0)
    bootstrap.main(["lab", "--headless"])
    assert lab_argv(recorder).count("--allow-root") == 1
    root_lines = [line for line in capsys.readouterr().out.splitlines() if "--allow-root" in line
                  and not line.startswith("+")]
    assert len(root_lines) == 1 and "root" in root_lines[0]


def test_lab_passes_ip_port_and_everything_after_double_dash_unchanged(recorder, capsys):
    extra = ["--ServerApp.token=abc", "--port=1", "--", "notes.ipynb"]
    bootstrap.main(["lab", "--headless", "--ip", "0.0.0.0", "--port", "9999", "--", *extra])
    argv = lab_argv(recorder)
    assert "--ip=0.0.0.0" in argv and "--port=9999" in argv
    assert argv[-len(extra):] == extra  # after the bootstrap's own options, in order, even a second `--`
    assert "0.0.0.0" in capsys.readouterr().out  # the container hint


def test_lab_command_is_accepted_by_jupyterlab_itself(recorder, monkeypatch):
    from jupyterlab import labapp  # pinned in requirements.txt
    monkeypatch.setattr(bootstrap.os, "geteuid", lambda: 0)
    bootstrap.main(["lab", "--headless", "--ip", "0.0.0.0", "--port", "9999", "--", "--ServerApp.token=abc"])
    app = labapp.LabApp()
    app.parse_command_line(lab_argv(recorder)[4:])  # exits with status 2 on an option JupyterLab does not know
    server = app.config.ServerApp
    assert (server.root_dir, server.ip, server.port) == (str(REPO / "notebooks"), "0.0.0.0", 9999)
    assert (server.open_browser, server.allow_root, server.token) == (False, True, "abc")


# ---------------------------------------------------------------- user mistakes: one line, status 2, no traceback

@pytest.mark.parametrize("argv, message", [
    (["lab", "--port", "http"], "not a port number"),
    (["lab", "--port", "0"], "1-65535"),
    (["lab", "--ServerApp.token=abc"], "go after --"),
    (["lab", "extra"], "go after --"),
    (["serve"], "invalid choice"),
    ([], "required"),
])
def test_bad_command_lines_exit_2_with_one_error_line(recorder, capsys, argv, message):
    with pytest.raises(SystemExit) as stopped:
        bootstrap.main(argv)
    assert stopped.value.code == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if "error:" in line]
    assert len(errors) == 1 and message in errors[0]
    assert recorder.runs == [] and recorder.execs == []


def test_a_bad_option_in_a_real_process_prints_no_traceback():
    result = subprocess.run([sys.executable, "-m", "course_utils.bootstrap", "lab", "--port", "99999"],
                            capture_output=True, text=True, timeout=60, cwd=REPO)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines()[-1].endswith("port must lie in 1-65535, got 99999")


# ---------------------------------------------------------------- test

@pytest.fixture
def no_browser(monkeypatch):
    monkeypatch.setattr(bootstrap.shutil, "which", lambda name: None)
    monkeypatch.delenv("COURSE_BROWSER_CHECK", raising=False)


def pytest_runs(recorder):
    return [(command, kwargs) for command, kwargs in recorder.runs if command[1:3] == ["-m", "pytest"]]


@pytest.mark.parametrize("argv, passed", [
    (["test"], []),
    (["test", "-x", "-k", "attention"], ["-x", "-k", "attention"]),  # the README's example
    (["test", "tests/test_vocab.py", "-q"], ["tests/test_vocab.py", "-q"]),
    (["test", "--", "-x", "--lab"], ["-x", "--lab"]),
])
def test_test_passes_its_arguments_to_pytest_after_the_notebooks_options(recorder, no_browser, monkeypatch, argv,
                                                                        passed):
    monkeypatch.delenv("COURSE_FAST", raising=False)
    bootstrap.main(argv)
    ((command, kwargs),) = pytest_runs(recorder)
    assert command[3:6] == ["tests", "notebooks", "--nbval-lax"]
    assert command[len(command) - len(passed):] == passed
    assert "--nbval-sanitize-with" in command
    assert kwargs["env"]["COURSE_FAST"] == "1"


def test_test_keeps_a_course_fast_set_by_the_caller(recorder, no_browser, monkeypatch):
    monkeypatch.setenv("COURSE_FAST", "0")
    bootstrap.main(["test"])
    ((_, kwargs),) = pytest_runs(recorder)
    assert kwargs["env"]["COURSE_FAST"] == "0"


@pytest.mark.parametrize("status", [1, 2])
def test_test_exits_with_pytests_failure_status(recorder, no_browser, status):
    recorder.statuses["-m pytest"] = status
    with pytest.raises(SystemExit) as stopped:
        bootstrap.main(["test"])
    assert stopped.value.code == status


def test_test_reports_that_pytest_collected_nothing_and_exits_5(recorder, no_browser, capsys):
    recorder.statuses["-m pytest"] = 5
    with pytest.raises(SystemExit) as stopped:
        bootstrap.main(["test", "-k", "no_such_test"])
    assert stopped.value.code == 5
    assert "collected no tests" in capsys.readouterr().err


def test_test_without_a_browser_notes_the_skipped_check_and_runs_pytest(recorder, no_browser, capsys):
    bootstrap.main(["test"])
    assert "Browser checks of the explorer and the offline site not run" in capsys.readouterr().out
    assert len(pytest_runs(recorder)) == 1


def test_test_with_course_browser_check_makes_a_missing_browser_an_error(recorder, no_browser, monkeypatch, capsys):
    monkeypatch.setenv("COURSE_BROWSER_CHECK", "1")
    with pytest.raises(SystemExit) as stopped:
        bootstrap.main(["test"])
    assert stopped.value.code == 1
    assert "apt-get install -y chromium chromium-driver" in capsys.readouterr().err
    assert recorder.runs == []


def test_test_runs_the_browser_check_first_where_chromium_exists(recorder, monkeypatch):
    monkeypatch.setattr(bootstrap.shutil, "which", lambda name: f"/usr/bin/{name}")
    bootstrap.main(["test"])
    commands = [command for command, _ in recorder.runs]
    assert commands[:2] == [[str(PYTHON), str(bootstrap.BROWSER_CHECK)], [str(PYTHON), str(bootstrap.SITE_CHECK)]]
    assert len(pytest_runs(recorder)) == 1


def test_a_failed_browser_check_stops_before_pytest(recorder, monkeypatch, capsys):
    monkeypatch.setattr(bootstrap.shutil, "which", lambda name: f"/usr/bin/{name}")
    recorder.statuses["run_explorer_check.py"] = 1
    with pytest.raises(SystemExit) as stopped:
        bootstrap.main(["test"])
    assert stopped.value.code == 1
    assert "browser check of the explorer failed" in capsys.readouterr().err
    assert pytest_runs(recorder) == []


# ---------------------------------------------------------------- the environment

@pytest.fixture
def tmp_venv(monkeypatch, tmp_path):
    """bootstrap.VENV in tmp_path; subprocess.run recorded (pip never runs)."""
    monkeypatch.setattr(bootstrap, "VENV", tmp_path / ".venv")
    recorder = Recorder()
    monkeypatch.setattr(bootstrap.subprocess, "run", recorder.run)
    return recorder


def fake_python(venv_dir: Path) -> None:
    (venv_dir / "bin").mkdir(parents=True)
    (venv_dir / "bin" / "python").write_text("")


def test_ensure_environment_installs_once_then_reuses_the_stamped_environment(tmp_venv, capsys):
    fake_python(bootstrap.VENV)
    assert bootstrap.ensure_environment() == bootstrap.VENV / "bin" / "python"
    pip_runs = tmp_venv.commands("pip")
    assert [command[-2:] for command in pip_runs] == [["-r", "requirements.txt"], ["-e", "."]]
    assert "--no-deps" in pip_runs[1]
    assert (bootstrap.VENV / bootstrap.STAMP_NAME).read_text().strip() == bootstrap.requirements_hash()
    bootstrap.ensure_environment()
    assert len(tmp_venv.commands("pip")) == 2  # nothing installed the second time
    assert "up to date" in capsys.readouterr().out


def test_a_changed_requirement_reinstalls(tmp_venv):
    fake_python(bootstrap.VENV)
    (bootstrap.VENV / bootstrap.STAMP_NAME).write_text("an older hash\n")
    bootstrap.ensure_environment()
    assert len(tmp_venv.commands("pip")) == 2


def test_a_failed_install_is_one_error_line_and_leaves_no_stamp(tmp_venv, capsys):
    fake_python(bootstrap.VENV)
    tmp_venv.statuses["requirements.txt"] = 1
    with pytest.raises(SystemExit) as stopped:
        bootstrap.main(["test"])
    assert stopped.value.code == 1
    assert capsys.readouterr().err.strip() == ("error: installing requirements.txt failed (exit status 1); "
                                               "see the messages above")
    assert not (bootstrap.VENV / bootstrap.STAMP_NAME).exists()


def test_without_ensurepip_the_fix_is_one_line_and_nothing_is_created(tmp_venv, monkeypatch, capsys):
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(bootstrap.importlib.util, "find_spec",
                        lambda name, *args: None if name == "ensurepip" else real_find_spec(name, *args))
    with pytest.raises(SystemExit) as stopped:
        bootstrap.main(["lab"])
    assert stopped.value.code == 1
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "apt-get install python3-venv" in err
    assert not bootstrap.VENV.exists() and tmp_venv.runs == []


def test_a_venv_whose_pip_setup_fails_is_removed_and_explained(tmp_venv, monkeypatch, capsys):
    def no_pip(self, context):  # what Debian's python3 without python3-venv does inside EnvBuilder.create
        raise subprocess.CalledProcessError(1, [context.env_exec_cmd, "-m", "ensurepip"])

    monkeypatch.setattr(venv.EnvBuilder, "_setup_pip", no_pip)
    with pytest.raises(SystemExit) as stopped:
        bootstrap.main(["lab"])
    assert stopped.value.code == 1
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "apt-get install python3-venv" in err
    assert not bootstrap.VENV.exists()  # a half-made .venv would be taken for a ready one next time


def test_an_old_python_is_refused_in_one_line(monkeypatch, capsys):
    monkeypatch.setattr(bootstrap.sys, "version_info", (3, 10, 12))
    with pytest.raises(SystemExit) as stopped:
        bootstrap.main(["test"])
    assert stopped.value.code == 1
    assert "Python 3.11 or newer is needed" in capsys.readouterr().err


# ---------------------------------------------------------------- the browser check starts the README's command

def load_browser_check():
    spec = importlib.util.spec_from_file_location("run_explorer_check", REPO / "tests/browser/run_explorer_check.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_browser_check_starts_lab_through_the_bootstrap(tmp_path):
    check = load_browser_check()
    command = check.bootstrap_lab_command(45678, tmp_path)
    assert command[1:4] == ["-m", "course_utils.bootstrap", "lab"]
    args, passed = bootstrap.parse(command[3:])
    assert (args.command, args.headless, args.ip, args.port) == ("lab", True, "127.0.0.1", 45678)
    assert "--ContentsManager.allow_hidden=True" in passed
    line = "        http://127.0.0.1:45678/lab?token=0a1b2c3d4e5f"  # as JupyterLab prints it
    found = check.URL_LINE.search(f"[I ServerApp] Jupyter Server is running at:\n{line}\n")
    assert found.groups() == ("45678", "0a1b2c3d4e5f")


# ---------------------------------------------------------------- preinstalled torch (Colab): pip keeps it

def project_requirements() -> dict[str, Requirement]:
    dependencies = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    return {Requirement(text).name: Requirement(text) for text in dependencies}


def test_the_pinned_versions_satisfy_the_package_requirements():
    pins = {}
    for line in (REPO / "requirements.txt").read_text().splitlines():
        line = line.split(" #")[0].strip()  # pip allows a comment after the requirement
        if line and not line.startswith("#"):
            requirement = Requirement(line)
            (spec,) = requirement.specifier
            pins[requirement.name] = Version(spec.version)
    for name, requirement in project_requirements().items():
        assert requirement.specifier.contains(pins[name]), f"requirements.txt pins {name} {pins[name]}"


@pytest.mark.parametrize("version, accepted", [("2.6.0", True), ("2.6.0+cu124", True), ("2.9.1", True),
                                               ("2.5.1", False), ("2.6.0rc1", False)])
def test_the_torch_requirement_accepts_colabs_torch(version, accepted):
    assert project_requirements()["torch"].specifier.contains(version) is accepted


def stub_distribution(site_packages: Path, name: str, version: str) -> None:
    """An installed distribution with metadata only: what pip's resolver looks at."""
    dist_info = site_packages / f"{name}-{version}.dist-info"
    dist_info.mkdir(parents=True)
    (dist_info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    (dist_info / "INSTALLER").write_text("pip\n")
    (dist_info / "RECORD").write_text("")


@pytest.fixture(scope="module")
def course_wheel(tmp_path_factory):
    """A wheel of the package whose metadata carries pyproject.toml's name, version and dependencies, written by
    hand (offline, no build backend needed, nothing written to the repository)."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    name, version = project["name"].replace("-", "_"), project["version"]
    dist_info = f"{name}-{version}.dist-info"
    metadata = "".join([f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {version}\n",
                        f"Requires-Python: {project['requires-python']}\n",
                        *(f"Requires-Dist: {dependency}\n" for dependency in project["dependencies"])])
    files = {"course_utils/__init__.py": "", f"{dist_info}/METADATA": metadata,
             f"{dist_info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    files[f"{dist_info}/RECORD"] = "".join(f"{path},,\n" for path in [*files, f"{dist_info}/RECORD"])
    wheel = tmp_path_factory.mktemp("wheel") / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, text in files.items():
            archive.writestr(path, text)
    return wheel


def colab_like_environment(folder: Path, torch_version: str) -> Path:
    """A fresh venv (no pip) holding stub distributions of torch `torch_version` and the other dependencies."""
    venv.EnvBuilder(with_pip=False).create(folder)
    python = folder / "bin" / "python"
    site_packages = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                                   capture_output=True, text=True, check=True).stdout.strip()
    for name, version in [("torch", torch_version), ("numpy", "1.26.4"), ("matplotlib", "3.8.0"),
                          ("tqdm", "4.66.0"), ("sacrebleu", "2.4.0")]:
        stub_distribution(Path(site_packages), name, version)
    return python


def pip_into(python: Path, *args: str) -> subprocess.CompletedProcess:
    """This environment's pip acting on the environment of `python`, ignoring pip config and PIP_* variables."""
    return subprocess.run([sys.executable, "-m", "pip", "--isolated", "--python", str(python), *args],
                          capture_output=True, text=True, timeout=300)


def installed(python: Path) -> dict[str, str]:
    listed = pip_into(python, "list", "--format", "json")
    assert listed.returncode == 0, listed.stderr
    return {item["name"]: item["version"] for item in json.loads(listed.stdout)}


def test_pip_keeps_a_preinstalled_torch_that_satisfies_the_requirement(tmp_path, course_wheel):
    """Colab: torch 2.6.0+cu124 is installed; installing the package (offline) must leave it alone."""
    python = colab_like_environment(tmp_path / "colab", "2.6.0+cu124")
    result = pip_into(python, "install", "--no-index", str(course_wheel))
    assert result.returncode == 0, result.stdout + result.stderr
    versions = installed(python)
    assert versions["torch"] == "2.6.0+cu124"
    assert versions["course-utils"] == "0.1.0"


def test_pip_wants_another_torch_when_the_preinstalled_one_is_too_old(tmp_path, course_wheel):
    """The contrast that shows the test above can fail: torch 2.5.1 makes pip look for a newer torch (none offline)."""
    python = colab_like_environment(tmp_path / "old", "2.5.1")
    result = pip_into(python, "install", "--no-index", str(course_wheel))
    assert result.returncode != 0
    assert "torch>=2.6" in result.stdout + result.stderr
    assert "course-utils" not in installed(python)


def test_test_runs_ruff_before_pytest_and_stops_when_it_fails(recorder, no_browser, monkeypatch):
    bootstrap.main(["test"])
    commands = [command for command, _ in recorder.runs]
    assert commands[0] == [str(PYTHON), "-m", "ruff", "check", "."]
    assert commands[1][1:3] == ["-m", "pytest"]

    failing = Recorder({"ruff": 1})
    monkeypatch.setattr(bootstrap.subprocess, "run", failing.run)
    with pytest.raises(SystemExit) as stopped:
        bootstrap.main(["test"])
    assert stopped.value.code == 1
    assert [command for command, _ in failing.runs] == [[str(PYTHON), "-m", "ruff", "check", "."]]
