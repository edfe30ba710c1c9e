"""Browser check of the attention explorer: JupyterLab headless + Chromium, the explorer cell run, a screenshot.

Not collected by pytest (the name does not start with test_): it needs a browser and takes about 20 s
(2-core machine, warm disk caches; JupyterLab start and the kernel's torch import dominate).

Setup (Debian/Ubuntu; once):

    sudo apt-get install -y chromium chromium-driver      # /usr/bin/chromium and /usr/bin/chromedriver

No Python package beyond the course's requirements: the script drives chromedriver through the W3C WebDriver
HTTP protocol with urllib (tests/browser/webdriver.py), so neither Selenium nor Playwright is needed.

Run from the repository root:

    .venv/bin/python tests/browser/run_explorer_check.py [--screenshot /tmp/explorer_screenshot.png] [--keep]
    .venv/bin/python tests/browser/run_explorer_check.py --frontend notebook --screenshot /tmp/nb7.png

What it does:
  1. starts JupyterLab with the README's command, `python -m course_utils.bootstrap lab --headless --ip 127.0.0.1
     --port <free port>` (so the check also covers the front door: environment reuse, corpus check, --allow-root
     as root), with Jupyter's config, runtime and workspace folders in a temp folder (your Jupyter settings are
     not read or changed), and reads the tokenised URL it prints;
  2. asks the server, with that token, for /api/contents: it must answer 200 and list the course's notebooks;
  3. writes a one-cell notebook (a tiny model overfitted on three sentences in about a second, then
     `AttentionExplorer(...)`) into a hidden folder notebooks/.explorer-check-<pid>/ (removed at the end; the
     server is told `--ContentsManager.allow_hidden=True` after `--`, and pytest never collects hidden folders);
  4. starts chromedriver + headless Chromium, opens the notebook with the token, runs the cell (Shift+Enter);
  5. waits for the explorer: the text box, model menu, greedy/beam buttons, step slider, and the heatmap PNG
     inside the Output widget, decoded by the browser (naturalWidth > 0);
  6. types a new sentence into the text box and presses Enter, then clicks the middle of the step slider:
     each time the kernel-side callback must replace the image and the summary (browser -> kernel -> browser);
  7. saves a screenshot, stops everything it started, and exits 0 (or 1 with the reason).

With --frontend notebook, Notebook 7 is started directly (token-less, the notebook in the temp folder): the
bootstrap opens only JupyterLab.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import NamedTuple

sys.path.insert(0, str(Path(__file__).resolve().parent))  # webdriver.py beside this file, also when imported
from webdriver import (  # noqa: E402
    CHROMEDRIVER,
    CHROMIUM,
    ELEMENT_KEY,
    CheckFailed,
    WebDriver,
    free_port,
    start_chromedriver,
    stop_chromedriver,
    wait_http,
)

REPO = Path(__file__).resolve().parents[2]
SHIFT, ENTER = "\ue008", "\ue007"  # WebDriver key codes
SENTENCE = "je suis tres content de te voir aujourd hui ."  # typed into the explorer's text box

CELL = '''\
import torch
from types import SimpleNamespace
from course_utils.vocab import Vocab
from course_utils.seq2seq import ModelConfig, Seq2Seq
from course_utils.explorer import AttentionExplorer

french = ["je suis tres content de te voir aujourd hui .", "il est grand .", "nous sommes ici ."]
english = ["i am very happy to see you today .", "he is tall .", "we are here ."]
src_vocab, tgt_vocab = Vocab.build(french), Vocab.build(english)
torch.manual_seed(0)
torch.set_num_threads(1)
model = Seq2Seq(ModelConfig(len(src_vocab), len(tgt_vocab), attention="bahdanau", embedding_size=32,
                            hidden_size=32, dropout=0.0))
src = [torch.tensor(src_vocab.encode(s)) for s in french]
tgt = torch.nn.utils.rnn.pad_sequence([torch.tensor(tgt_vocab.encode(s)) for s in english], batch_first=True)
src_lengths = torch.tensor([len(s) for s in src])
src = torch.nn.utils.rnn.pad_sequence(src, batch_first=True)
optimizer = torch.optim.Adam(model.parameters(), lr=0.03)
for _ in range(60):  # a second of overfitting: outputs of a sensible length, so the picture looks real
    loss = torch.nn.functional.nll_loss(model(src, src_lengths, tgt).log_probs.transpose(1, 2), tgt, ignore_index=0)
    optimizer.zero_grad(); loss.backward(); optimizer.step()
tiny = SimpleNamespace(model=model.eval(), src_vocab=src_vocab, tgt_vocab=tgt_vocab)
explorer = AttentionExplorer({"tiny (3 sentences)": tiny}, sentence="il est grand .")
explorer
'''


def wait_update(browser: WebDriver, image_css: str, old_src: str, sentence: str, action: str) -> None:
    """Wait until the summary shows `sentence` and the heatmap image differs from `old_src`."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        summary = browser.run_js("return document.querySelector('.widget-html').innerText;")
        image = browser.find(image_css)
        src = image and browser.run_js("return arguments[0].src.length + ':' + arguments[0].src.slice(-64);",
                                       {ELEMENT_KEY: image})
        if sentence in summary and src and src != old_src:
            return
        time.sleep(0.3)
    raise CheckFailed(f"{action} did not update the summary and the heatmap within 60 s")


class Server(NamedTuple):
    """A running Jupyter server: its process (a session leader), base URL, token and the check notebook's path."""

    process: subprocess.Popen
    base: str
    token: str
    notebook: str  # path of the check notebook relative to the server's root, as URLs want it

    def get(self, path: str, timeout: float = 10):
        """GET base + path with the token; returns (HTTP status, parsed JSON body)."""
        request = urllib.request.Request(self.base + path, headers={"Authorization": f"token {self.token}"})
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as error:
            return error.code, None


def wait_kernel_idle(server: Server, timeout: float) -> None:
    """Poll the server's REST API until the notebook's kernel has started and is idle."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        _, kernels = server.get("/api/kernels")
        if any(kernel.get("execution_state") == "idle" for kernel in kernels or []):
            return
        time.sleep(0.5)
    raise CheckFailed(f"no idle kernel within {timeout:.0f} s (see the JupyterLab log)")


def write_notebook(folder: Path) -> Path:
    notebook = {
        "cells": [{"id": "explorer-check", "cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
                   "source": CELL.splitlines(keepends=True)}],
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
        "nbformat": 4, "nbformat_minor": 5,
    }
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "explorer_check.ipynb"
    path.write_text(json.dumps(notebook, indent=1))
    return path


def jupyter_env(folder: Path) -> dict[str, str]:
    """Jupyter's config/data/runtime/IPython folders inside `folder`, with no "Jupyter news?" toast."""
    page_config = folder / "config" / "labconfig" / "page_config.json"
    page_config.parent.mkdir(parents=True, exist_ok=True)
    page_config.write_text(json.dumps({"disabledExtensions": {"@jupyterlab/apputils-extension:announcements": True}}))
    return dict(os.environ, JUPYTER_CONFIG_DIR=str(folder / "config"), JUPYTER_DATA_DIR=str(folder / "data"),
                JUPYTER_RUNTIME_DIR=str(folder / "runtime"),
                IPYTHONDIR=str(folder / "ipython"), MPLBACKEND="module://matplotlib_inline.backend_inline",
                PYTHONPATH=str(REPO))


LAB_QUIET = ["--LabApp.news_url=None", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"]
URL_LINE = re.compile(r"http://127\.0\.0\.1:(\d+)/lab\?token=(\w+)")


def bootstrap_lab_command(port: int, folder: Path) -> list[str]:
    """The README's `lab --headless` command, with this check's Jupyter options after `--`."""
    return [sys.executable, "-m", "course_utils.bootstrap", "lab", "--headless", "--ip", "127.0.0.1",
            "--port", str(port), "--", f"--LabApp.workspaces_dir={folder / 'workspaces'}", *LAB_QUIET,
            "--ContentsManager.allow_hidden=True"]


def read_lab_url(log_path: Path, process: subprocess.Popen, timeout: float) -> tuple[str, str]:
    """Wait for the tokenised URL that `bootstrap lab --headless` tells the user to open; returns (base, token)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = URL_LINE.search(log_path.read_text(errors="replace"))
        if found:
            return f"http://127.0.0.1:{found.group(1)}", found.group(2)
        if process.poll() is not None:
            raise CheckFailed(f"`bootstrap lab` exited with status {process.returncode} before printing its URL:\n"
                              + log_path.read_text(errors="replace")[-2000:])
        time.sleep(0.5)
    raise CheckFailed(f"`bootstrap lab --headless` printed no http://127.0.0.1:<port>/lab?token=... line within "
                      f"{timeout:.0f} s (log: {log_path})")


def launch_bootstrap_lab(folder: Path, port: int, log) -> subprocess.Popen:
    """Start `python -m course_utils.bootstrap lab --headless` on `port` (it becomes JupyterLab: execv)."""
    return subprocess.Popen(bootstrap_lab_command(port, folder), cwd=REPO, env=jupyter_env(folder), stdout=log,
                            stderr=subprocess.STDOUT, start_new_session=True)


def check_front_door(process: subprocess.Popen, log_path: Path, check_folder: Path) -> Server:
    """Read the URL the bootstrap printed; with its token /api/contents must answer 200 and list the course's
    notebooks, and a wrong token must be refused (403)."""
    base, token = read_lab_url(log_path, process, 240)
    server = Server(process, base, token, f"{check_folder.name}/explorer_check.ipynb")
    wait_http(f"{base}/api", 60, "JupyterLab")
    status, listing = server.get("/api/contents")
    if status != 200:
        raise CheckFailed(f"GET {base}/api/contents with the printed token answered {status}, not 200")
    listed = {item["name"] for item in listing["content"]}
    course = {path.name for path in (REPO / "notebooks").glob("*.ipynb")}
    if not course or not course <= listed:
        raise CheckFailed(f"/api/contents does not list the course notebooks {sorted(course - listed)}; "
                          f"it lists {sorted(listed)}")
    status, _ = server._replace(token=token + "x").get("/api/contents")
    if status != 403:
        raise CheckFailed(f"/api/contents answered {status} to a wrong token, not 403: is the server token-less?")
    return server


def launch_notebook7(folder: Path, port: int, log) -> subprocess.Popen:
    """Notebook 7 of this environment, token-less on localhost, rooted at `folder`."""
    command = [sys.executable, "-m", "notebook", "--no-browser", f"--port={port}", "--ip=127.0.0.1",
               f"--ServerApp.root_dir={folder}", "--IdentityProvider.token=", "--ServerApp.password="]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        command.append("--allow-root")  # containers and CI often run as root
    return subprocess.Popen(command, cwd=folder, env=jupyter_env(folder), stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)


def stop(process: subprocess.Popen) -> None:
    """Stop a process started as a session leader, and everything it started (kernels)."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            pass
    try:
        os.killpg(process.pid, signal.SIGKILL)  # kernels left behind by the server, if any
    except ProcessLookupError:
        pass
    process.wait()


def check(screenshot: Path, chromium: str, chromedriver: str, keep: bool, frontend: str = "lab") -> float:
    """Run the whole check; returns its duration in seconds. Raises CheckFailed with the reason."""
    for binary in (chromium, chromedriver):
        if not Path(binary).exists():
            raise CheckFailed(f"{binary} not found: sudo apt-get install -y chromium chromium-driver")
    started = time.monotonic()
    folder = Path(tempfile.mkdtemp(prefix="explorer-check-"))
    # lab: inside the served notebooks/ folder, hidden; notebook: the temp folder is Notebook 7's root
    check_folder = REPO / "notebooks" / f".explorer-check-{os.getpid()}" if frontend == "lab" else folder
    lab_port, driver_port = free_port(), free_port()
    lab_log = open(folder / "jupyterlab.log", "wb")
    jupyter = driver_process = browser = None
    try:
        write_notebook(check_folder)
        jupyter = (launch_bootstrap_lab if frontend == "lab" else launch_notebook7)(folder, lab_port, lab_log)
        if frontend == "lab":
            server = check_front_door(jupyter, folder / "jupyterlab.log", check_folder)
        else:
            wait_http(f"http://127.0.0.1:{lab_port}/api", 90, "Jupyter Notebook")
            server = Server(jupyter, f"http://127.0.0.1:{lab_port}", "", "explorer_check.ipynb")
        driver_process = start_chromedriver(chromedriver, driver_port)
        browser = WebDriver(driver_port, chromium)
        page = "doc/tree" if frontend == "lab" else "notebooks"  # JupyterLab's single-document view
        query = f"?token={server.token}" if server.token else ""
        browser.get(f"{server.base}/{page}/{server.notebook}{query}")
        browser.wait_for(".jp-Notebook .jp-Cell .cm-content", 90, "the notebook's code cell")
        wait_kernel_idle(server, 120)
        editor = browser.find(".jp-Notebook .jp-Cell .cm-content")
        browser.click(editor)
        browser.type(editor, SHIFT + ENTER + SHIFT)  # Shift+Enter runs the cell (the trailing SHIFT releases it)

        browser.wait_for(".widget-text input", 180, "the explorer's text box")
        for css, what in [(".widget-dropdown select", "the model menu"),
                          (".widget-toggle-buttons", "the greedy/beam buttons"),
                          (".widget-slider", "the step slider")]:
            browser.wait_for(css, 30, what)
        image_css = ".widget-output .jp-OutputArea-output img"
        image = browser.wait_for(image_css, 60, "the heatmap image in the Output widget")
        width = browser.run_js("return arguments[0].naturalWidth;", {ELEMENT_KEY: image})
        if not width:
            raise CheckFailed("the heatmap <img> is present but the browser could not decode it")
        first_src = browser.run_js("return arguments[0].src.length + ':' + arguments[0].src.slice(-64);",
                                   {ELEMENT_KEY: image})
        summary = browser.run_js("return document.querySelector('.widget-html').innerText;")
        if "source" not in summary or "output" not in summary:
            raise CheckFailed(f"the summary (source / output) is missing above the figure: {summary!r}")

        text_box = browser.find(".widget-text input")
        browser.clear(text_box)
        browser.type(text_box, SENTENCE + ENTER)  # continuous_update=False: Enter sends the value
        wait_update(browser, image_css, first_src, SENTENCE, "typing a new sentence")
        steps = browser.run_js("return document.querySelector('.widget-slider .widget-readout').innerText;")

        track = browser.wait_for(".widget-slider .noUi-target", 10, "the slider track")
        before = browser.run_js("return arguments[0].src.length + ':' + arguments[0].src.slice(-64);",
                                {ELEMENT_KEY: browser.find(image_css)})
        browser.click(track)  # a click in the middle of the track moves the handle there, as a student would
        wait_update(browser, image_css, before, SENTENCE, "moving the step slider")
        readout = browser.run_js("return document.querySelector('.widget-slider .widget-readout').innerText;")
        if not 1 < int(readout) < int(steps):
            raise CheckFailed(f"clicking the middle of the slider moved it from {steps} to {readout}")
        browser.run_js("arguments[0].scrollIntoView({block: 'center'});", {ELEMENT_KEY: browser.find(image_css)})
        time.sleep(1.0)  # let the new image paint before the screenshot
        screenshot.parent.mkdir(parents=True, exist_ok=True)
        browser.screenshot(screenshot)
        return time.monotonic() - started
    except CheckFailed:
        if browser is not None:
            failed = folder / "failure.png"
            browser.screenshot(failed)
            print(f"screenshot of the failure: {failed}; JupyterLab log: {folder / 'jupyterlab.log'}")
        keep = True
        raise
    finally:
        if browser is not None:
            browser.quit()
        if driver_process is not None:
            stop_chromedriver(driver_process)
        if jupyter is not None:
            stop(jupyter)
        lab_log.close()
        if check_folder != folder:
            shutil.rmtree(check_folder, ignore_errors=True)
        if not keep:
            shutil.rmtree(folder, ignore_errors=True)
        else:
            print(f"kept the temp folder {folder}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--screenshot", type=Path, default=Path("/tmp/explorer_screenshot.png"))
    parser.add_argument("--chromium", default=CHROMIUM)
    parser.add_argument("--chromedriver", default=CHROMEDRIVER)
    parser.add_argument("--keep", action="store_true", help="keep the temp folder (notebook, JupyterLab log)")
    parser.add_argument("--frontend", choices=["lab", "notebook"], default="lab",
                        help="JupyterLab 4 (default) or Notebook 7 (the `notebook` package)")
    args = parser.parse_args()
    try:
        seconds = check(args.screenshot, args.chromium, args.chromedriver, args.keep, args.frontend)
    except CheckFailed as error:
        print(f"FAILED: {error}")
        return 1
    print(f"OK ({args.frontend}): explorer rendered in Chromium, heatmap image present, updated after typing a "
          f"sentence and moving the slider; {seconds:.0f} s; screenshot {args.screenshot}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
