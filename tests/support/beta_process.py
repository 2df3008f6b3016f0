"""fleetsim-beta as a real process (``python -m streamops.sim.beta``), for fault drills: it
can be frozen (SIGSTOP), stopped and started again on its data directory, or replaced by one
on a fresh log."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests


@dataclass
class BetaProcess:
    port: int
    data_dir: Path
    journal: Path
    log: Path
    seed: int = 22
    vehicles: int = 30
    rate: float = 30
    malformed_every: int = 103
    proc: subprocess.Popen[bytes] | None = field(default=None, init=False)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        return f"{self.base_url}/pings"

    def start(self, max_pings: int | None = None, timeout: float = 30) -> None:
        """Start generating (``max_pings`` more records, then serve on) and wait for it."""
        argv = [sys.executable, "-m", "streamops.sim.beta", "--port", str(self.port),
                "--data-dir", str(self.data_dir), "--journal", str(self.journal),
                "--seed", str(self.seed), "--vehicles", str(self.vehicles),
                "--rate", str(self.rate), "--malformed-every", str(self.malformed_every),
                "--progress-every", "5", "--linger",
                "--pause-file", str(self.pause_file)]  # fmt: skip
        if max_pings is not None:
            argv += ["--max-pings", str(max_pings)]
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"fleetsim-beta exited {self.proc.returncode}: "
                                     f"{self.log.read_text()[-2000:]}")  # fmt: skip
            try:
                self.head()
                return
            except requests.RequestException:
                time.sleep(0.2)
        raise AssertionError(f"fleetsim-beta did not answer on port {self.port}")

    @property
    def pause_file(self) -> Path:
        return self.log.with_suffix(".pause")

    def pause(self) -> int:
        """Hold emission (the server answers on); the last sequence once it stopped moving."""
        self.pause_file.touch()
        last = -1
        while True:
            time.sleep(0.2)  # the generator looks at the file every 20 ms
            now = int(self.head()["last"])
            if now == last:
                return now
            last = now

    def resume(self) -> None:
        self.pause_file.unlink(missing_ok=True)

    def head(self) -> dict[str, Any]:
        resp = requests.get(f"{self.base_url}/head", timeout=5)
        resp.raise_for_status()
        return dict(resp.json())

    def freeze(self) -> None:
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGSTOP)

    def thaw(self) -> None:
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGCONT)

    def kill(self) -> None:
        """kill -9 (a crash: whatever it emitted and no reader fetched yet stays unread)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(20)

    def stop(self, timeout: float = 20) -> None:
        """SIGTERM (thawed first), then SIGKILL if it lingers."""
        if self.proc is None or self.proc.poll() is not None:
            return
        self.thaw()
        self.proc.terminate()
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout)

    def wait_generated(self, emitted: int, timeout: float = 120) -> int:
        """Wait until this run emitted ``emitted`` records; the head's last sequence."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            head = self.head()
            if int(head.get("emitted") or 0) >= emitted:
                return int(head["last"])
            time.sleep(0.5)
        raise AssertionError(f"fleetsim-beta did not emit {emitted} records in {timeout:.0f}s")
