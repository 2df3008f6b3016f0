"""The driver's side of a handover: a stopped driver waits for its successor to run."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from spark_jobs.runtime.control import ControlLoop
from streamops.layout import StateLayout, write_json_atomic


def loop_for(layout: StateLayout, driver_id: str) -> ControlLoop:
    board = SimpleNamespace(snapshot=lambda: {"driver_id": driver_id})
    return ControlLoop(SimpleNamespace(layout=layout, job="job", board=board))  # type: ignore[arg-type]


def status_later(layout: StateLayout, delay: float, doc: dict[str, Any]) -> None:
    def write() -> None:
        time.sleep(delay)
        write_json_atomic(layout.status_file("job"), doc)

    threading.Thread(target=write, daemon=True).start()


def test_waits_until_the_next_driver_runs(tmp_path: Path) -> None:
    layout = StateLayout.at(tmp_path)
    write_json_atomic(layout.status_file("job"), {"driver_id": "old", "state": "STOPPED"})
    status_later(layout, 0.3, {"driver_id": "new", "state": "STARTING"})
    status_later(layout, 0.8, {"driver_id": "new", "state": "RUNNING"})
    started = time.monotonic()
    loop_for(layout, "old")._await_successor(wait_s=10)
    assert 0.8 <= time.monotonic() - started < 5


def test_gives_up_when_no_successor_runs(tmp_path: Path) -> None:
    layout = StateLayout.at(tmp_path)
    write_json_atomic(layout.status_file("job"), {"driver_id": "old", "state": "STOPPED"})
    started = time.monotonic()
    loop_for(layout, "old")._await_successor(wait_s=0.5)
    assert time.monotonic() - started >= 0.5
