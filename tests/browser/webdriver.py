"""What the browser checks share: headless Chromium behind chromedriver on a free port, and the few W3C WebDriver
commands they send.

The checks (run_explorer_check.py, run_site_check.py, run_deck_check.py, run_lab_check.py) drive chromedriver
through the W3C WebDriver HTTP protocol with urllib, so neither Selenium nor Playwright is needed. They are run as
scripts, `python tests/browser/<check>.py`, which puts this folder on sys.path: `from webdriver import ...` finds
this module.
"""
from __future__ import annotations

import base64
import contextlib
import json
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
ELEMENT_KEY = "element-6066-11e4-a52e-4f735466cecf"  # W3C WebDriver's key for element references


class CheckFailed(RuntimeError):
    """The page did not show up as expected in the browser (or a tool it needs did not answer)."""


def poll(probe, timeout: float, interval: float):
    """Call `probe` every `interval` s until it returns something truthy (returned) or `timeout` s pass (None)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = probe()
        if value:
            return value
        time.sleep(interval)
    return None


class WebDriver:
    """The few W3C WebDriver commands the checks need, over plain HTTP (chromedriver speaks it natively).

    Headless Chromium with `window` size; `extra_args` go after the standard ones (the site check's offline switches)
    and `logging_prefs`, when given, becomes `goog:loggingPrefs` (for `console()`).
    """

    def __init__(self, port: int, chromium: str, window=(1400, 1200), extra_args=(),
                 logging_prefs: dict | None = None):
        self.base = f"http://127.0.0.1:{port}"
        args = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                f"--window-size={window[0]},{window[1]}", *extra_args]
        always = {"browserName": "chrome", "goog:chromeOptions": {"binary": chromium, "args": args}}
        if logging_prefs is not None:
            always["goog:loggingPrefs"] = logging_prefs
        self.session = self._call("POST", "/session", {"capabilities": {"alwaysMatch": always}})["sessionId"]

    def _call(self, method: str, path: str, body: dict | None = None):
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.base + path, data=data, method=method,
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=120) as response:
                return json.loads(response.read())["value"]
        except urllib.error.HTTPError as error:
            raise CheckFailed(f"WebDriver {method} {path}: {error.read().decode()[:400]}") from None

    def _session(self, method: str, path: str, body: dict | None = None):
        return self._call(method, f"/session/{self.session}{path}", body)

    def get(self, url: str) -> None:
        self._session("POST", "/url", {"url": url})

    def run_js(self, script: str, *args):
        return self._session("POST", "/execute/sync", {"script": script, "args": list(args)})

    def wait_js(self, script: str, timeout: float, what: str):
        """Poll `script` until it returns something truthy; returns that."""
        value = poll(lambda: self.run_js(script), timeout, 0.3)
        if not value:
            raise CheckFailed(f"{what} within {timeout:.0f} s")
        return value

    def find(self, css: str) -> str | None:
        found = self._session("POST", "/elements", {"using": "css selector", "value": css})
        return found[0][ELEMENT_KEY] if found else None

    def wait_for(self, css: str, timeout: float, what: str) -> str:
        element = poll(lambda: self.find(css), timeout, 0.5)
        if not element:
            raise CheckFailed(f"{what} did not appear within {timeout:.0f} s (CSS {css!r})")
        return element

    def click(self, element: str) -> None:
        self._session("POST", f"/element/{element}/click", {})

    def type(self, element: str, text: str) -> None:
        self._session("POST", f"/element/{element}/value", {"text": text})

    def clear(self, element: str) -> None:
        self._session("POST", f"/element/{element}/clear", {})

    def console(self) -> list[dict]:
        """Browser console entries since the last call (chromedriver's log endpoint; needs `logging_prefs`)."""
        return self._session("POST", "/se/log", {"type": "browser"})

    def set_window(self, width: int, height: int) -> None:
        """Resize the browser window (W3C Set Window Rect)."""
        self._session("POST", "/window/rect", {"width": width, "height": height})

    def screenshot(self, path: Path) -> None:
        path.write_bytes(base64.b64decode(self._session("GET", "/screenshot")))

    def quit(self) -> None:
        try:
            self._call("DELETE", f"/session/{self.session}")
        except (CheckFailed, OSError):
            pass


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_http(url: str, timeout: float, what: str) -> None:
    """Poll `url` until it answers (any HTTP answer below 400)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=5):
                return
        except OSError:
            time.sleep(0.5)
    raise CheckFailed(f"{what} did not answer at {url} within {timeout:.0f} s")


def start_chromedriver(chromedriver: str, port: int, timeout: float = 30) -> subprocess.Popen:
    """Start chromedriver on `port` (its own session, output discarded) and wait until it answers /status."""
    process = subprocess.Popen([chromedriver, f"--port={port}"], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        wait_http(f"http://127.0.0.1:{port}/status", timeout, "chromedriver")
    except BaseException:
        stop_chromedriver(process)
        raise
    return process


def stop_chromedriver(process: subprocess.Popen) -> None:
    process.terminate()
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()


@contextlib.contextmanager
def headless_chromium(chromium: str, chromedriver: str, **options):
    """A WebDriver session (`options` as WebDriver's) on chromedriver started on a free port; both stopped on exit.
    Raises CheckFailed, naming the install command, where either program is missing."""
    for tool in (chromium, chromedriver):
        if not shutil.which(tool):
            raise CheckFailed(f"{tool} not found: apt-get install -y chromium chromium-driver")
    port = free_port()
    driver_process = start_chromedriver(chromedriver, port)
    browser = None
    try:
        browser = WebDriver(port, chromium, **options)
        yield browser
    finally:
        if browser is not None:
            browser.quit()
        stop_chromedriver(driver_process)
