"""Headless Debian Chromium driven over the DevTools protocol (no browser download, no driver).

Chromium starts with ``--remote-debugging-port`` on a free loopback port and a fresh profile;
one page target is driven through its WebSocket: set a cookie, navigate, read the page's
text, evaluate JavaScript, click, take a screenshot. Used by the Airflow UI and dashboard
tests::

    with Chromium(port=free_port(), profile=tmp_path / "chromium") as browser:
        browser.set_cookie("_token", token, url)
        browser.goto(f"{url}/dags")
        browser.wait_for_text("health_check")
        browser.screenshot(tmp_path / "dags.png")
"""

from __future__ import annotations

import base64
import itertools
import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path
from types import TracebackType
from typing import Any

import requests
from websockets.sync.client import ClientConnection, connect

CHROMIUM = "/usr/bin/chromium"
FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-dev-shm-usage", "--hide-scrollbars", "--window-size=1440,900",
)  # fmt: skip


def chromium_path() -> str | None:
    found = shutil.which("chromium") or (CHROMIUM if os.access(CHROMIUM, os.X_OK) else None)
    return found


class Chromium:
    def __init__(self, *, port: int, profile: Path, timeout: float = 60.0) -> None:
        self.port, self.profile, self.timeout = port, profile, timeout
        self._ids = itertools.count(1)
        self._proc: subprocess.Popen[bytes] | None = None
        self._ws: ClientConnection | None = None

    def __enter__(self) -> Chromium:
        binary = chromium_path()
        assert binary, "Chromium is not installed (apt-get install -y chromium)"
        self.profile.mkdir(parents=True, exist_ok=True)
        log = open(self.profile / "chromium.log", "wb")  # noqa: SIM115 - closed with the process
        self._proc = subprocess.Popen(  # noqa: S603 - fixed argv
            [binary, *FLAGS, f"--user-data-dir={self.profile}",
             f"--remote-debugging-port={self.port}", "--remote-allow-origins=*", "about:blank"],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
        log.close()
        self._ws = connect(self._page_socket(), max_size=64 * 1024 * 1024)
        self.call("Page.enable")
        self.call("Network.enable")
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:  # fmt: skip
        if self._ws is not None:
            self._ws.close()
        if self._proc is not None:
            try:
                os.killpg(self._proc.pid, signal.SIGTERM)
                self._proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self._proc.pid, signal.SIGKILL)
                self._proc.wait(10)
            except ProcessLookupError:
                pass

    def _page_socket(self) -> str:
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            assert self._proc is not None and self._proc.poll() is None, (
                f"Chromium exited: {(self.profile / 'chromium.log').read_text()[-2000:]}"
            )
            try:
                targets = requests.get(f"http://127.0.0.1:{self.port}/json/list", timeout=2).json()
                pages = [t for t in targets if t.get("type") == "page"]
                if pages:
                    return str(pages[0]["webSocketDebuggerUrl"])
            except (requests.RequestException, ValueError):
                pass
            time.sleep(0.5)
        raise AssertionError(f"Chromium's DevTools did not answer on port {self.port}")

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        """Send one DevTools command and return its result (events are skipped)."""
        assert self._ws is not None
        msg_id = next(self._ids)
        self._ws.send(json.dumps({"id": msg_id, "method": method, "params": params}))
        while True:
            msg = json.loads(self._ws.recv(timeout=self.timeout))
            if msg.get("id") == msg_id:
                if "error" in msg:
                    raise AssertionError(f"DevTools {method} failed: {msg['error']}")
                return dict(msg.get("result") or {})

    def set_cookie(self, name: str, value: str, url: str) -> None:
        result = self.call("Network.setCookie", name=name, value=value, url=url, httpOnly=True)
        assert result.get("success", True), f"cookie {name} refused"

    def goto(self, url: str) -> None:
        self.call("Page.navigate", url=url)

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (JSON-serialisable values)."""
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        if "exceptionDetails" in result:
            raise AssertionError(f"{expression!r} threw: {result['exceptionDetails']}")
        return result.get("result", {}).get("value")

    def text(self) -> str:
        return str(self.evaluate("document.body ? document.body.innerText : ''") or "")

    def wait_for(self, expression: str, timeout: float = 30.0) -> Any:
        """Poll a JavaScript expression until it is truthy; return its value."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = self.evaluate(expression)
            if value:
                return value
            time.sleep(0.2)
        raise AssertionError(f"{expression!r} stayed falsy for {timeout:.0f}s")

    def click(self, x: float, y: float) -> None:
        """A left click at viewport coordinates ``(x, y)``."""
        for kind in ("mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent", type=kind, x=x, y=y, button="left",
                      clickCount=1)  # fmt: skip

    def wait_for_text(self, *needles: str, timeout: float = 90.0) -> str:
        """Poll the page's visible text until it contains every needle; return it."""
        deadline = time.monotonic() + timeout
        text = ""
        while time.monotonic() < deadline:
            text = self.text()
            if all(n in text for n in needles):
                return text
            time.sleep(1.0)
        raise AssertionError(f"page never showed {needles}; it shows: {text[:1500]!r}")

    def screenshot(self, path: Path) -> Path:
        time.sleep(1.5)  # let the last render (charts, icons) settle
        data = self.call("Page.captureScreenshot", format="png")["data"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(data))
        return path
