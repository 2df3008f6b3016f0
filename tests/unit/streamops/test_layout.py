"""The state root layout, and its atomic JSON helpers."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from streamops.exceptions import UnsafeNameError
from streamops.state.layout import StateLayout, append_jsonl, read_json, write_json_atomic


@pytest.fixture
def layout(tmp_path: Path) -> StateLayout:
    return StateLayout.at(tmp_path / "state")


def test_at_resolves_the_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    assert StateLayout.at("~/x/../state").root == tmp_path.resolve() / "state"
    monkeypatch.chdir(tmp_path)
    assert StateLayout.at("var").root == tmp_path.resolve() / "var"


def test_job_paths(layout: StateLayout) -> None:
    root = layout.root
    assert layout.checkpoints_dir == root / "checkpoints"
    assert layout.job_checkpoints("fleet-pings") == root / "checkpoints" / "fleet-pings"
    assert layout.checkpoint("fleet-pings", "vehicles") == (
        root / "checkpoints" / "fleet-pings" / "vehicles"
    )
    assert layout.jobs_dir == root / "jobs"
    job = root / "jobs" / "fleet-pings"
    assert layout.job_dir("fleet-pings") == job
    assert layout.status_file("fleet-pings") == job / "status.json"
    assert layout.status_history("fleet-pings") == job / "status-history.jsonl"
    assert layout.submissions_file("fleet-pings") == job / "submissions.jsonl"
    assert layout.control_dir("fleet-pings") == job / "control"
    assert layout.lease_file("fleet-pings") == job / "lease.json"


def test_savepoint_cluster_and_data_paths(layout: StateLayout) -> None:
    root = layout.root
    assert layout.savepoints_dir == root / "savepoints"
    assert layout.savepoint("before-v2") == root / "savepoints" / "before-v2"
    assert layout.cluster_dir == root / "cluster"
    assert layout.logs_dir == root / "cluster" / "logs"
    assert layout.recovery_dir == root / "cluster" / "recovery"
    assert layout.worker_dir("worker-1") == root / "cluster" / "work" / "worker-1"
    assert layout.pid_file("master") == root / "cluster" / "pids" / "master.json"
    assert layout.lib_dir == root / "lib"
    assert layout.alpha_dir == root / "data" / "alpha"
    assert layout.beta_dir == root / "data" / "beta"
    assert layout.default_store_url == f"sqlite:///{root}/fleet.db"


def test_paths_do_not_touch_the_disk(layout: StateLayout) -> None:
    layout.status_file("fleet-pings")
    layout.checkpoint("fleet-pings", "vehicles")
    assert not layout.root.exists()


NAMED: dict[str, Callable[[StateLayout, str], Path]] = {
    "job_checkpoints": lambda lay, n: lay.job_checkpoints(n),
    "checkpoint_job": lambda lay, n: lay.checkpoint(n, "vehicles"),
    "checkpoint_stage": lambda lay, n: lay.checkpoint("fleet-pings", n),
    "job_dir": lambda lay, n: lay.job_dir(n),
    "status_file": lambda lay, n: lay.status_file(n),
    "status_history": lambda lay, n: lay.status_history(n),
    "submissions_file": lambda lay, n: lay.submissions_file(n),
    "control_dir": lambda lay, n: lay.control_dir(n),
    "lease_file": lambda lay, n: lay.lease_file(n),
    "savepoint": lambda lay, n: lay.savepoint(n),
    "worker_dir": lambda lay, n: lay.worker_dir(n),
    "pid_file": lambda lay, n: lay.pid_file(n),
}


@pytest.mark.parametrize("path_of", NAMED.values(), ids=NAMED.keys())
@pytest.mark.parametrize("name", ["..", "/etc", "a/../b", "", "Upper"])
def test_every_named_path_refuses_unsafe_names(
    layout: StateLayout, path_of: Callable[[StateLayout, str], Path], name: str
) -> None:
    with pytest.raises(UnsafeNameError):
        path_of(layout, name)


def test_known_jobs(layout: StateLayout) -> None:
    assert layout.known_jobs() == []
    for job in ("zeta", "alpha-job", "fleet-pings"):
        layout.job_dir(job).mkdir(parents=True)
    (layout.jobs_dir / "stray-file.json").write_text("{}", encoding="utf-8")
    assert layout.known_jobs() == ["alpha-job", "fleet-pings", "zeta"]


def test_write_json_atomic_leaves_no_temp_file(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "dir" / "status.json"
    write_json_atomic(path, {"b": 1, "a": [1, 2], "when": Path("/x")})
    write_json_atomic(path, {"b": 2})
    assert read_json(path) == {"b": 2}
    assert [p.name for p in path.parent.iterdir()] == ["status.json"]


def test_write_json_atomic_is_sorted_and_readable(tmp_path: Path) -> None:
    path = tmp_path / "doc.json"
    write_json_atomic(path, {"b": 1, "a": Path("/x")})  # non-JSON values become strings
    text = path.read_text(encoding="utf-8")
    assert text.endswith("\n")
    assert list(json.loads(text)) == ["a", "b"]
    assert read_json(path) == {"a": "/x", "b": 1}


class Unprintable:
    def __str__(self) -> str:
        raise RuntimeError("cannot render")


def test_failed_write_keeps_the_old_file_and_no_temp(tmp_path: Path) -> None:
    path = tmp_path / "status.json"
    write_json_atomic(path, {"state": "RUNNING"})
    with pytest.raises(RuntimeError, match="cannot render"):
        write_json_atomic(path, {"state": Unprintable()})
    assert read_json(path) == {"state": "RUNNING"}
    assert [p.name for p in tmp_path.iterdir()] == ["status.json"]


def test_read_json_of_a_missing_file_is_none(tmp_path: Path) -> None:
    assert read_json(tmp_path / "nope.json") is None


def test_append_jsonl(tmp_path: Path) -> None:
    path = tmp_path / "jobs" / "x" / "history.jsonl"
    records: list[dict[str, Any]] = [{"b": 1, "a": 2}, {"event": "submitted", "at": 1.5}]
    for record in records:
        append_jsonl(path, record)
    lines = path.read_text(encoding="utf-8").splitlines()
    assert [json.loads(line) for line in lines] == records
    assert lines[0] == '{"a": 2, "b": 1}'
