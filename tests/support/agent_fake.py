"""A hand-written fake node daemon and the settings of a tiny release store, for agent tests."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from streamops.agent.client import AgentClient
from streamops.exceptions import ProcessError
from streamops.settings import Settings

TOKEN = "s3cret-token"


@dataclass
class FakeDaemon:
    """Hand-written fake of the node's Spark daemon: records the verbs it was asked."""

    node: str = "worker-1"
    role: str = "worker"
    running: bool = False
    calls: list[str] = field(default_factory=list)

    def pid(self) -> int | None:
        return 4242 if self.running else None

    def worker_id(self) -> str | None:
        return "worker-x" if self.running else None

    def start(self) -> None:
        self.calls.append("start")
        self.running = True

    def stop(self) -> None:
        self.calls.append("stop")
        self.running = False

    def decommission(self) -> None:
        self.calls.append("decommission")
        self.running = False

    def kill(self) -> None:
        self.calls.append("kill")
        self.running = False


def make_settings(tmp_path: Path) -> Settings:
    config = tmp_path / "config"
    for release in ("r1", "r2"):
        folder = config / "jars" / "releases" / release
        folder.mkdir(parents=True)
        (folder / "streamops-udf.jar").write_bytes(b"PK fake " + release.encode())
    return Settings.from_env({}, state_root=str(tmp_path / "state"), config_dir=str(config))


@dataclass
class AgentUnderTest:
    url: str
    daemon: FakeDaemon
    settings: Settings

    def client(self, token: str = TOKEN) -> AgentClient:
        return AgentClient(self.url, token, timeout=10)


@dataclass
class SleepDaemon:
    """A node daemon played by a real child process (``sleep``): it runs, it can die."""

    node: str = "worker-1"
    role: str = "worker"
    proc: subprocess.Popen[bytes] | None = None
    starts: int = 0  # start() calls that launched a process
    failing: int = 0  # the next ``failing`` starts raise, as a daemon that cannot come up

    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None and self.proc.poll() is None else None

    def worker_id(self) -> str | None:
        return None

    def start(self) -> None:
        if self.pid() is not None:
            return
        if self.failing:
            self.failing -= 1
            raise ProcessError(f"{self.node} exited during start (a test's failing start)")
        self.proc = subprocess.Popen(["sleep", "300"])
        self.starts += 1

    def crash(self) -> int:
        """kill -9 of the process, as a JVM that dies; its pid."""
        assert self.proc is not None
        pid = self.proc.pid
        self.proc.kill()
        self.proc.wait()
        return pid

    def stop(self) -> None:
        if self.pid() is not None:
            self.crash()

    decommission = stop
    kill = stop
