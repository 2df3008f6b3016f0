"""The job status document's types: tolerant reading of old and odd files, the JSON written
back in the same keys and shapes, the strict writing, and the helpers readers share."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from spark_jobs.runtime.status import StatusBoard
from streamops.state.job_status import JobStatus, LastFailure, StageStatus, read_status
from streamops.state.layout import StateLayout, write_json_atomic

JOB = "fleet-pings"

# A status.json as the writer before these types wrote it (a job stopped by a savepoint).
OLD_FILE: dict[str, Any] = {
    "app_id": "app-1", "classpath_release": "r1", "driver_id": "driver-1",
    "from_savepoint": None, "host": "h", "job": JOB, "pid": 42,
    "processing_guarantee": "exactly-once", "savepoint": "sp-1", "started_at": 2000.0,
    "state": "STOPPED", "stopped_at": 3000.0, "stopped_by": "req-1",
    "took_over_from": "driver-0", "trigger_interval": "2 seconds", "updated_at": 3000.5,
    "version": "3",
    "sources_state": {"fleetsim-beta": {"state": "ok", "since": None, "reason": None,
                                        "losses": []}},
    "stages": {
        "stats": {
            "batch_duration_ms": 512, "batch_id": 5,
            "batch_timestamp": "2026-01-01T00:00:02.000Z", "descriptor": None,
            "durations_ms": {"addBatch": 400, "triggerExecution": 512},
            "idle_at": 1006.5, "idle_since": 1005.5, "input_rows_per_second": 60.0,
            "last_batch_at": 1004.5, "late_rows": 1, "num_input_rows": 120,
            "processed_rows_per_second": 240.0, "ready": True, "resumed_batch": 4,
            "sources": [{"description": "fleet_beta", "end_offset": {"sequence": 220},
                         "latest_offset": {"sequence": 400},
                         "start_offset": {"sequence": 100}}],
            "state_rows": 4, "stateful": True, "watermark": None,
        },
        "vehicles": {
            "batch_id": None, "stateful": False, "failed_batches": 1,
            "last_failure": {"at": 1003.0, "error": "boom"},
        },
    },
}  # fmt: skip


def stage(**fields: Any) -> dict[str, Any]:
    return {"batch_id": 1, "ready": True, **fields}


# --- reading ---------------------------------------------------------------------------------
def test_an_old_file_reads_whole_and_writes_back_in_its_keys_and_shapes() -> None:
    status = JobStatus.parse(json.loads(json.dumps(OLD_FILE)))
    assert (status.state, status.driver_id, status.pid) == ("STOPPED", "driver-1", 42)
    stats = status.stages["stats"]
    assert stats.sources[0].end_offset == {"sequence": 220}
    assert stats.durations_ms["triggerExecution"] == 512
    vehicles = status.stages["vehicles"]
    assert vehicles.last_failure == LastFailure(at=1003.0, error="boom")
    assert vehicles.watermark is None and "watermark" not in vehicles.to_json()
    assert json.dumps(status.to_json(), sort_keys=True) == json.dumps(OLD_FILE, sort_keys=True)


def test_missing_keys_read_as_none_or_empty_and_are_not_written() -> None:
    status = JobStatus.parse({"state": "RUNNING", "stages": {"vehicles": {}}})
    assert status.driver_id is None and status.sources_state == {} and status.error is None
    entry = status.stages["vehicles"]
    assert (entry.batch_id, entry.ready, entry.late_rows, entry.sources) == (None, False, 0, [])
    assert entry.last_failure is None and entry.durations_ms == {}
    assert status.to_json() == {"state": "RUNNING", "stages": {"vehicles": {}}}


def test_unknown_keys_are_kept_where_they_were() -> None:
    doc = {
        "state": "RUNNING",
        "owner": {"team": "fleet"},
        "stages": {"vehicles": stage(new_metric=3, sources=[{"end_offset": 7, "lag": 2}])},
    }
    status = JobStatus.parse(doc)
    assert status.to_json() == doc
    assert status.model_extra == {"owner": {"team": "fleet"}}


def test_a_value_of_the_wrong_type_costs_that_field_only() -> None:
    status = JobStatus.parse({
        "state": "RUNNING", "started_at": "soon", "version": 2, "pid": "12",
        "stages": {"vehicles": stage(batch_id="seven", last_batch_at=5.0, sources=[3, {}]),
                   "odd": "not an object"},
        "sources_state": {"beta": {"state": "ok"}, "alpha": None},
    })  # fmt: skip
    assert (status.state, status.started_at, status.version, status.pid) == (
        "RUNNING", None, "2", 12)  # fmt: skip
    assert list(status.stages) == ["vehicles"]
    entry = status.stages["vehicles"]
    assert (entry.batch_id, entry.last_batch_at, len(entry.sources)) == (None, 5.0, 1)
    assert status.sources_state == {"beta": {"state": "ok"}}


@pytest.mark.parametrize("doc", [None, [], "RUNNING", 3])
def test_a_document_that_is_no_object_is_an_empty_status(doc: Any) -> None:
    assert JobStatus.parse(doc).to_json() == {}


@pytest.mark.parametrize("text", ["{", "", "[1, 2]", "\xff"])
def test_an_unreadable_file_is_no_status(tmp_path: Path, text: str) -> None:
    path = tmp_path / "status.json"
    path.write_text(text, encoding="latin-1")
    assert JobStatus.load(path) is None


def test_load_and_read_status(tmp_path: Path) -> None:
    layout = StateLayout.at(tmp_path / "state")
    assert JobStatus.load(layout.status_file(JOB)) is None
    empty = read_status(layout, JOB)
    assert (empty.state, empty.stages, empty.last_batch_at()) == (None, {}, None)
    write_json_atomic(layout.status_file(JOB), OLD_FILE)
    assert read_status(layout, JOB).to_json() == OLD_FILE


# --- writing ---------------------------------------------------------------------------------
def test_writing_refuses_an_undeclared_name_or_a_wrong_type_and_changes_nothing() -> None:
    status = JobStatus(state="RUNNING", stages={})
    with pytest.raises(TypeError, match="JobStatus declares no field reason"):
        status.update(state="STOPPED", reason="why")
    with pytest.raises(ValidationError):
        status.update(state="STOPPED", stopped_at="later")
    with pytest.raises(ValidationError):
        StageStatus().update(sources=["not an object"])
    assert status.to_json() == {"state": "RUNNING", "stages": {}}
    status.update(state="STOPPED", stopped_at=3.0)
    assert status.to_json() == {"state": "STOPPED", "stages": {}, "stopped_at": 3.0}


def test_what_the_board_writes_a_reader_reads_as_the_board_holds_it(tmp_path: Path) -> None:
    layout = StateLayout.at(tmp_path / "state")
    board = StatusBoard(layout, JOB, {"driver_id": "driver-1", "version": "3", "pid": 7})
    board.declare_stage("vehicles", stateful=False, sources=[{"end_offset": {"sequence": 4}}])
    board.declare_stage("stats", stateful=True, descriptor={"operators": []})
    board.record_progress(
        {
            "name": "vehicles",
            "batchId": 5,
            "numInputRows": 3,
            "inputRowsPerSecond": 1.5,
            "processedRowsPerSecond": 2.25,
            "durationMs": {"triggerExecution": 40},
            "sources": [{"description": "beta", "endOffset": {"sequence": 9}}],
        }
    )
    board.record_idle("stats")
    board.record_failure("stats", "database is locked")
    board.annotate(classpath_release="r2")
    read = JobStatus.load(layout.status_file(JOB))
    assert read is not None
    held = board.snapshot()
    assert read.to_json() == held.to_json()
    assert read.state == "RUNNING" and read.all_ready() and read.classpath_release == "r2"
    vehicles, stats = read.stages["vehicles"], read.stages["stats"]
    assert (vehicles.batch_id, vehicles.stateful, vehicles.sources[0].end_offset) == (
        5, False, {"sequence": 9})  # fmt: skip
    assert (stats.batch_id, stats.descriptor, stats.failed_batches) == (None, {"operators": []}, 1)
    assert stats.last_failure is not None and stats.last_failure.error == "database is locked"
    assert read.rate("input_rows_per_second") == 1.5


# --- helpers ---------------------------------------------------------------------------------
def test_last_batch_and_summed_rates_over_the_stages() -> None:
    status = JobStatus.parse({"stages": {
        "a": stage(last_batch_at=100.0, input_rows_per_second=10.04,
                   processed_rows_per_second=None),
        "b": stage(last_batch_at=250.0, input_rows_per_second=20.0,
                   processed_rows_per_second=30.0),
        "c": stage(last_batch_at=None),
    }})  # fmt: skip
    assert status.last_batch_at() == 250.0
    assert status.rate("input_rows_per_second") == 30.0
    assert status.rate("processed_rows_per_second") == 30.0
    none = JobStatus.parse({"stages": {"a": stage()}})
    assert none.last_batch_at() is None and none.rate("input_rows_per_second") is None


def test_ready_and_idle_over_the_stages() -> None:
    assert not JobStatus().all_ready() and JobStatus().all_idle()
    both = JobStatus.parse({"stages": {"a": stage(idle_since=5.0), "b": stage(idle_since=6.0)}})
    assert both.all_ready() and both.all_idle()
    one = JobStatus.parse({"stages": {"a": stage(), "b": {"batch_id": None}}})
    assert not one.all_ready() and not one.all_idle()


def test_the_error_of_a_driver_and_a_stop_since() -> None:
    failed = JobStatus.parse({"driver_id": "driver-1", "error": "boom"})
    assert failed.error_of("driver-1") == "boom"
    assert failed.error_of("driver-2") is None and JobStatus().error_of(None) is None
    stopped = JobStatus.parse({"stopped_by": "req-1", "stopped_at": 100.0})
    assert stopped.stopped_since(100.0) and not stopped.stopped_since(100.5)
    assert not JobStatus.parse({"stopped_at": 100.0}).stopped_since(0.0)
