from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

from rich.console import Console

from streamops.cli.cluster_cmds import print_status
from streamops.cluster.client import WorkerInfo
from streamops.cluster.status import build_status, tail, worker_sort_key
from streamops.cluster.worker_names import (
    match_worker,
    started_addresses,
    worker_address_from_log,
    worker_label,
    worker_names,
)
from streamops.processes import PidRecord
from streamops.settings import Settings

RECORDED = Path(__file__).parent / "data" / "master_dead_workers.json"
"""The master's ``/json/`` after worker-2 was killed, worker-3 decommissioned and worker-1
restarted (its earlier run is DEAD), beside workers registered from another machine."""


def worker_json(wid: str, port: int, webui: int, state: str = "ALIVE") -> dict[str, Any]:
    return {"id": wid, "host": "127.0.0.1", "port": port,
            "webuiaddress": f"http://127.0.0.1:{webui}", "cores": 1, "coresused": 0,
            "memory": 1024, "memoryused": 0, "state": state, "lastheartbeat": 1}


def rec(name: str, webui: int, log: Path, offset: int = 0, kind: str = "worker") -> PidRecord:
    return PidRecord(pid=100, pgid=100, name=name, kind=kind, ports={"webui": webui},  # type: ignore[arg-type]
                     started_at="", cmd=["x", "y"], log=str(log), log_offset=offset)


def test_match_by_fixed_webui_port_prefers_live_entry(tmp_path: Path) -> None:
    entries = [WorkerInfo.from_json(w) for w in (
        worker_json("worker-20260101000000-127.0.0.1-1", 1, 8181, "DEAD"),
        worker_json("worker-20260101000100-127.0.0.1-2", 2, 8181, "ALIVE"),
        worker_json("worker-20260101000100-127.0.0.1-3", 3, 8182, "ALIVE"),
    )]
    found = match_worker(rec("worker-1", 8181, tmp_path / "none.log"), entries)
    assert found is not None and found.port == 2
    assert match_worker(rec("worker-9", 8999, tmp_path / "none.log"), entries) is None


def test_match_by_logged_address_after_offset(tmp_path: Path) -> None:
    log = tmp_path / "w.log"
    old = "x INFO Worker: Starting Spark worker 127.0.0.1:1111 with 1 cores, 1024.0 MiB RAM\n"
    log.write_text(old + "=== restart\n"
                   "x INFO Worker: Starting Spark worker 127.0.0.1:2222 with 1 cores\n")
    entries = [WorkerInfo.from_json(worker_json("a", 1111, 5000)),
               WorkerInfo.from_json(worker_json("b", 2222, 5001))]
    assert worker_address_from_log(rec("w", 0, log, offset=len(old))) == ("127.0.0.1", 2222)
    found = match_worker(rec("w", 0, log, offset=len(old)), entries)
    assert found is not None and found.id == "b"
    assert match_worker(rec("w", 0, tmp_path / "missing.log"), entries) is None


def test_build_status_joins_pid_files_and_master(tmp_path: Path) -> None:
    settings = Settings.from_env({}, state_root=str(tmp_path))
    records = {
        "master": rec("master", 8080, tmp_path / "m.log", kind="master"),
        "worker-10": rec("worker-10", 8190, tmp_path / "a.log"),
        "worker-2": rec("worker-2", 8182, tmp_path / "b.log"),
    }
    state = {
        "status": "ALIVE",
        "workers": [worker_json("w2", 2, 8182), worker_json("other", 9, 9999),
                    worker_json("gone", 8, 9998, "DEAD")],
        "activedrivers": [{"id": "driver-1", "state": "RUNNING", "worker": "w2",
                           "mainclass": "M", "cores": 1, "memory": 512, "starttime": "5"}],
        "activeapps": [{"id": "app-1", "name": "fleet", "state": "RUNNING", "cores": 1}],
    }
    status = build_status(settings, records, state)
    assert status.master_alive and status.master_status == "ALIVE"
    assert [(w.name, w.id, w.state) for w in status.workers] == [
        ("worker-2", "w2", "ALIVE"), ("worker-10", None, "STARTING"), (None, "other", "ALIVE")]
    assert [w.name for w in status.alive_workers] == ["worker-2", None]
    assert status.drivers[0].worker == "w2" and status.apps[0].name == "fleet"

    down = build_status(settings, records, None)
    assert not down.master_alive and down.master_pid == 100
    assert {w.state for w in down.workers} == {"UNKNOWN"}


def test_worker_sort_key() -> None:
    names = ["worker-10", "extra", "worker-2"]
    assert sorted(names, key=worker_sort_key) == ["worker-2", "worker-10", "extra"]


def test_tail(tmp_path: Path) -> None:
    log = tmp_path / "x.log"
    log.write_text("old\n" + "".join(f"line {i}\n" for i in range(30)))
    assert tail(log, 2) == "line 28\nline 29"
    assert tail(log, 50, offset=4).startswith("line 0")
    assert "no log" in tail(tmp_path / "none.log")


def _start_line(port: int) -> str:
    return f"26/03/01 10:15:00 INFO Worker: Starting Spark worker 127.0.0.1:{port} with 2 cores\n"


def recorded_cluster(tmp_path: Path) -> tuple[Settings, dict[str, PidRecord], dict[str, Any]]:
    """The recorded master JSON, the worker logs of this state root, worker-1 running."""
    settings = Settings.from_env({}, state_root=str(tmp_path))
    logs = settings.layout.logs_dir
    logs.mkdir(parents=True)
    first = "=== start\n" + _start_line(34001)
    (logs / "worker-1.log").write_text(first + "=== start\n" + _start_line(34011))
    (logs / "worker-2.log").write_text("=== start\n" + _start_line(34005))
    (logs / "worker-3.log").write_text("=== start\n" + _start_line(34007))
    (logs / "fleetsim-beta.log").write_text(_start_line(34099))  # not a worker's log
    records = {"worker-1": rec("worker-1", 0, logs / "worker-1.log", offset=len(first))}
    return settings, records, json.loads(RECORDED.read_text())


def test_worker_names_from_pid_files_and_logs(tmp_path: Path) -> None:
    settings, records, state = recorded_cluster(tmp_path)
    logs = settings.layout.logs_dir
    assert started_addresses(logs) == {("127.0.0.1", 34001): "worker-1",
                                       ("127.0.0.1", 34011): "worker-1",
                                       ("127.0.0.1", 34005): "worker-2",
                                       ("127.0.0.1", 34007): "worker-3"}  # fmt: skip
    names = worker_names(logs, [WorkerInfo.from_json(w) for w in state["workers"]], records)
    assert names.name("worker-20260301103000-127.0.0.1-34011") == "worker-1"
    assert names.label("worker-20260301101501-127.0.0.1-34005") == "worker-2 (127.0.0.1:34005)"
    assert names.name("worker-20260301090500-10.0.0.9-7078") == "10.0.0.9:7078"  # not ours
    assert names.label("worker-20260301090500-10.0.0.9-7078") == "10.0.0.9:7078"
    assert names.name("worker-unknown") == "worker-unknown"
    assert worker_label(None, None) == "-"


def test_a_grown_log_is_read_from_where_it_was_left(tmp_path: Path) -> None:
    log = tmp_path / "worker-4.log"
    log.write_text(_start_line(1000))
    assert started_addresses(tmp_path) == {("127.0.0.1", 1000): "worker-4"}
    with log.open("a") as fh:
        fh.write("x" * 5000 + "\n" + _start_line(2000))
    assert started_addresses(tmp_path) == {("127.0.0.1", 1000): "worker-4",
                                           ("127.0.0.1", 2000): "worker-4"}  # fmt: skip
    log.write_text(_start_line(3000))  # replaced: read again from the start
    assert started_addresses(tmp_path) == {("127.0.0.1", 3000): "worker-4"}


def test_status_keeps_dead_and_decommissioned_workers(tmp_path: Path) -> None:
    settings, records, state = recorded_cluster(tmp_path)
    status = build_status(settings, records, state)
    assert [(w.name, w.state, w.address) for w in status.workers] == [
        ("worker-1", "ALIVE", "127.0.0.1:34011"), (None, "ALIVE", "10.0.0.9:7078")]
    assert [(w.name, w.state) for w in status.gone] == [
        ("worker-3", "DECOMMISSIONED"), ("worker-2", "DEAD"), ("worker-1", "DEAD"),
        (None, "DEAD")]  # newest first
    assert status.names.label(status.drivers[0].worker) == "worker-1 (127.0.0.1:34011)"

    for width in (60, 200):
        out = Console(width=width, file=io.StringIO(), record=True, color_system=None)
        print_status(status, out)
        text = " ".join(out.export_text().split())
        assert "…" not in text
        for value in ("worker-3", "DECOMMISSIONED", "worker-2", "127.0.0.1:34005",
                      "DEAD (earlier run)", "10.0.0.8:7078", "(not ours)",
                      "worker-20260301101501-127.0.0.1-34005", "driver-20260301103012-0002",
                      "worker-1 (127.0.0.1:34011)", "spark://127.0.0.1:7077"):  # fmt: skip
            assert value in text, (width, value)
