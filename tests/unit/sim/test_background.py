"""``streamops sim start|status|stop``: a real fleetsim-beta in the background, on a free
loopback port, started, watched, stopped and started again; no process is left."""

from __future__ import annotations

import json
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from streamops.cli import main
from streamops.exceptions import SimulatorError
from streamops.processes import pid_alive
from streamops.settings import Settings
from streamops.sim import background


@pytest.fixture
def state_root(tmp_path: Path) -> Iterator[Path]:
    root = tmp_path / "state"
    yield root
    background.stop(Settings.from_env({}, state_root=str(root)))  # whatever the test left


def cli(root: Path, capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert main(["--state-root", str(root), *argv]) == 0
    return capsys.readouterr().out


def sim_status(root: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    rows = json.loads(cli(root, capsys, "sim", "status", "--json"))
    return next(r for r in rows if r["sim"] == "beta")


def head(port: int) -> dict[str, Any]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/head", timeout=5) as resp:
        return dict(json.loads(resp.read()))


def wait_emitted(root: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    deadline = time.monotonic() + 30
    while True:
        found = sim_status(root, capsys)
        if (found["emitted"] or 0) > 0 or time.monotonic() > deadline:
            return found
        time.sleep(0.2)


def test_sim_start_status_stop_start(
    state_root: Path, capsys: pytest.CaptureFixture[str], free_port: Callable[[], int]
) -> None:
    port = free_port()
    said = cli(state_root, capsys, "sim", "start", "beta", "--port", str(port), "--rate", "50")
    assert "fleetsim-beta started (pid" in said and f"127.0.0.1:{port}" in said

    first = wait_emitted(state_root, capsys)
    assert first["running"] and first["port"] == port and first["emitted"] > 0
    pid = first["pid"]
    stream = head(port)["stream"]
    assert (state_root / "services" / "fleetsim-beta.json").is_file()
    assert Path(first["log"]).is_file()
    table = cli(state_root, capsys, "sim", "status")
    assert "fleetsim-beta" in table and "running" in table and str(port) in table

    again = cli(state_root, capsys, "sim", "start", "beta", "--port", str(port))
    assert "already running" in again and str(pid) in again

    assert "stopped fleetsim-beta" in cli(state_root, capsys, "sim", "stop")
    assert not pid_alive(pid)
    stopped = sim_status(state_root, capsys)
    assert not stopped["running"] and stopped["pid"] is None and stopped["port"] is None
    assert "no simulator was running" in cli(state_root, capsys, "sim", "stop", "beta")

    last = head_after_restart = None
    try:
        # started again without flags: the ones it was last started with, not the defaults
        cli(state_root, capsys, "sim", "start", "beta")
        second = wait_emitted(state_root, capsys)
        assert second["running"] and second["pid"] != pid and second["port"] == port
        settings = Settings.from_env({}, state_root=str(state_root))
        assert background.remembered(settings, "beta")[-2:] == ["--rate", "50"]
        head_after_restart = head(port)
        last = head_after_restart["last"]
    finally:
        cli(state_root, capsys, "sim", "stop", "beta")
    # the default data dir under the state root keeps the stream across the restart
    assert head_after_restart is not None and head_after_restart["stream"] == stream
    assert last is not None and last > first["emitted"]
    assert not pid_alive(second["pid"])


def test_an_unknown_simulator_is_refused(state_root: Path) -> None:
    assert main(["--state-root", str(state_root), "sim", "stop", "gamma"]) == 2


def test_a_start_that_fails_is_not_remembered_and_flags_do_not_pile_up(
    state_root: Path, capsys: pytest.CaptureFixture[str], free_port: Callable[[], int]
) -> None:
    """``sim start beta --help`` (the simulator prints its usage and exits) must not become
    the flags of every later start; flags given again replace the remembered ones."""
    settings = Settings.from_env({}, state_root=str(state_root))
    with pytest.raises(SimulatorError, match="exited at start"):
        background.start(settings, "beta", ["--help"])
    assert background.remembered(settings, "beta") == []

    port = free_port()
    try:
        cli(state_root, capsys, "sim", "start", "beta", "--port", str(port), "--rate", "50")
        cli(state_root, capsys, "sim", "stop", "beta")
        cli(state_root, capsys, "sim", "start", "beta", "--rate", "60")
        assert wait_emitted(state_root, capsys)["port"] == port
    finally:
        cli(state_root, capsys, "sim", "stop", "beta")
    assert background.remembered(settings, "beta") == ["--port", str(port), "--rate", "60"]


def test_a_relative_journal_is_the_callers_path_not_the_service_folders(
    state_root: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``sim start transactions --journal j.jsonl`` typed in a folder writes ``j.jsonl``
    there: the service runs in its log's folder, so a relative path is made absolute where
    it was typed (and remembered so)."""
    here = tmp_path / "terminal"
    here.mkdir()
    monkeypatch.chdir(here)
    settings = Settings.from_env({}, state_root=str(state_root))
    try:
        cli(state_root, capsys, "sim", "start", "transactions", "--journal", "j.jsonl",
            "--rate", "40")
        deadline = time.monotonic() + 30
        journal = here / "j.jsonl"  # created at start, written at the first flush
        while not (journal.exists() and journal.stat().st_size) and time.monotonic() < deadline:
            time.sleep(0.2)
    finally:
        cli(state_root, capsys, "sim", "stop", "transactions")
    assert (here / "j.jsonl").stat().st_size > 0
    assert not list(settings.layout.logs_dir.glob("*.jsonl"))
    assert background.remembered(settings, "transactions")[:2] == [
        "--journal", str(here / "j.jsonl")]


def test_absolute_paths_leave_other_flags_and_absolute_values_alone() -> None:
    base = Path("/base")
    assert background.absolute_paths(
        ["--rate", "5", "--data-dir=d", "--journal", "/abs/j", "--store-url", "sqlite:///t.db",
         "--pause-file", "p"], base,
    ) == ["--rate", "5", "--data-dir=/base/d", "--journal", "/abs/j",
          "--store-url", "sqlite:////base/t.db", "--pause-file", "/base/p"]
