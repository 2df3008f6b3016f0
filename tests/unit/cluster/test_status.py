from __future__ import annotations

from pathlib import Path
from typing import Any

from streamops.cluster.client import WorkerInfo
from streamops.cluster.daemons import PidRecord
from streamops.cluster.status import (
    build_status,
    match_worker,
    tail,
    worker_address_from_log,
    worker_sort_key,
)
from streamops.settings import Settings


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
