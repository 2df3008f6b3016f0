"""Job status: ``summarize`` of Spark progress JSON and the ``StatusBoard`` files."""

from __future__ import annotations

import json
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from pydantic import ValidationError

from spark_jobs.runtime.status import StatusBoard, StatusListener, summarize
from spark_jobs.sources.source_state import SourceState
from streamops.state.layout import StateLayout, read_json, write_json_atomic

JOB = "fleet-pings"
IDENTITY = {"driver_id": "driver-20260101000000-0001", "version": "3", "app_id": "app-1"}


def progress(
    name: str,
    batch_id: int,
    *,
    rows: int = 120,
    operators: tuple[tuple[int, int], ...] = (),
    watermark: str | None = None,
    input_rate: Any = 60.0,
    processed_rate: Any = 240.04,
) -> dict[str, Any]:
    """A ``StreamingQueryProgress`` as Spark serialises it (``progress.json``);
    ``operators`` are ``(numRowsTotal, numRowsDroppedByWatermark)`` of each state operator."""
    doc: dict[str, Any] = {
        "id": "7c5f3d2e-0000-4000-8000-000000000001",
        "runId": "7c5f3d2e-0000-4000-8000-000000000002",
        "name": name,
        "timestamp": "2026-01-01T00:00:02.000Z",
        "batchId": batch_id,
        "batchDuration": 512,
        "numInputRows": rows,
        "inputRowsPerSecond": input_rate,
        "processedRowsPerSecond": processed_rate,
        "durationMs": {"addBatch": 400, "getBatch": 3, "latestOffset": 5, "triggerExecution": 512},
        "eventTime": {"watermark": watermark} if watermark else {},
        "stateOperators": [
            {
                "operatorName": "stateStoreSave",
                "numRowsTotal": total,
                "numRowsUpdated": 3,
                "numRowsDroppedByWatermark": dropped,
            }
            for total, dropped in operators
        ],  # fmt: skip
        "sources": [
            {
                "description": "fleet_beta",
                "startOffset": {"sequence": 100},
                "endOffset": {"sequence": 220},
                "latestOffset": {"sequence": 400},
                "numInputRows": rows,
            }
        ],
        "sink": {"description": "ForeachBatchSink", "numOutputRows": -1},
    }
    if input_rate is None:
        del doc["inputRowsPerSecond"]  # Spark omits NaN rates
    return doc


@pytest.fixture
def layout(tmp_path: Path) -> StateLayout:
    return StateLayout.at(tmp_path / "state")


@pytest.fixture
def board(layout: StateLayout) -> StatusBoard:
    return StatusBoard(layout, JOB, dict(IDENTITY))


def history(layout: StateLayout) -> list[dict[str, Any]]:
    text = layout.status_history(JOB).read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines()]


# --- summarize -----------------------------------------------------------------------------
def test_summarize_reads_the_fields_the_ops_side_needs() -> None:
    before = time.time()
    entry = summarize(progress("vehicles", 7, operators=((10, 1), (5, 2)),
                               watermark="2026-01-01T00:00:00.000Z"))  # fmt: skip
    assert entry["batch_id"] == 7
    assert before <= entry["last_batch_at"] <= time.time()
    assert entry["batch_timestamp"] == "2026-01-01T00:00:02.000Z"
    assert entry["num_input_rows"] == 120
    assert entry["input_rows_per_second"] == 60.0
    assert entry["processed_rows_per_second"] == 240.0  # rounded to 0.1
    assert entry["batch_duration_ms"] == 512
    assert entry["watermark"] == "2026-01-01T00:00:00.000Z"
    assert entry["state_rows"] == 15
    assert entry["sources"] == [
        {
            "description": "fleet_beta",
            "start_offset": {"sequence": 100},
            "end_offset": {"sequence": 220},
            "latest_offset": {"sequence": 400},
        }
    ]


def test_summarize_of_a_first_batch_without_state_or_watermark() -> None:
    first = progress("vehicles", 0, input_rate=None)
    first["sources"][0]["startOffset"] = None
    entry = summarize(first)
    assert (entry["batch_id"], entry["watermark"], entry["state_rows"]) == (0, None, 0)
    assert entry["input_rows_per_second"] is None
    assert entry["sources"][0]["start_offset"] is None


@pytest.mark.parametrize("rate", ["NaN?", "", [], {}])
def test_summarize_tolerates_odd_rates(rate: Any) -> None:
    entry = summarize(progress("vehicles", 1, processed_rate=rate))
    assert entry["processed_rows_per_second"] is None


def test_summarize_of_an_empty_progress() -> None:
    entry = summarize({})
    assert entry["batch_id"] is None
    assert entry["sources"] == [] and entry["state_rows"] == 0
    assert entry["batch_duration_ms"] is None and entry["watermark"] is None


# --- StatusBoard ---------------------------------------------------------------------------
def test_board_starts_in_starting_with_identity(board: StatusBoard, layout: StateLayout) -> None:
    doc = read_json(layout.status_file(JOB))
    assert doc is None  # nothing written before the first change
    board.declare_stage("vehicles", stateful=False)
    doc = read_json(layout.status_file(JOB))
    assert doc is not None
    assert doc["state"] == "STARTING"
    assert doc["job"] == JOB
    assert {k: doc[k] for k in IDENTITY} == IDENTITY
    assert doc["stages"] == {"vehicles": {"batch_id": None, "stateful": False}}
    assert doc["updated_at"] >= doc["started_at"]


def test_running_only_when_every_declared_stage_has_a_batch(
    board: StatusBoard, layout: StateLayout
) -> None:
    board.declare_stage("vehicles")
    board.declare_stage("vehicle-stats-1m", stateful=True)
    board.record_progress(progress("vehicles", 0))
    board.record_progress(progress("vehicles", 1))
    assert board.snapshot().state == "STARTING"
    assert read_json(layout.status_file(JOB))["state"] == "STARTING"  # type: ignore[index]
    board.record_progress(progress("vehicle-stats-1m", 0, operators=((4, 0),)))
    doc = read_json(layout.status_file(JOB))
    assert doc is not None and doc["state"] == "RUNNING"
    assert doc["stages"]["vehicles"]["batch_id"] == 1
    assert doc["stages"]["vehicle-stats-1m"]["batch_id"] == 0
    assert doc["stages"]["vehicle-stats-1m"]["stateful"] is True  # declared info is kept
    assert doc["stages"]["vehicle-stats-1m"]["state_rows"] == 4
    assert board.snapshot().to_json() == doc


def test_declare_stage_again_keeps_its_progress(board: StatusBoard) -> None:
    board.declare_stage("vehicles")
    board.record_progress(progress("vehicles", 4))
    board.declare_stage("vehicles", stateful=False)
    assert board.snapshot().stages["vehicles"].batch_id == 4


def test_an_explicit_state_is_not_overridden_by_progress(board: StatusBoard) -> None:
    board.declare_stage("vehicles")
    board.set_state("STOPPED", stopped_by="control-1")
    board.record_progress(progress("vehicles", 0))
    snap = board.snapshot()
    assert (snap.state, snap.stopped_by) == ("STOPPED", "control-1")


def test_the_board_writes_only_what_the_status_declares(
    board: StatusBoard, layout: StateLayout
) -> None:
    """The writer and the readers share one definition: a name it does not declare, or a
    value not of its field's type, is refused, and nothing of it is written."""
    board.declare_stage("vehicles")
    with pytest.raises(TypeError, match="declares no field reason"):
        board.set_state("STOPPING", reason="stop requested")
    with pytest.raises(TypeError, match="declares no field colour"):
        board.declare_stage("windows", colour="blue")
    with pytest.raises(ValidationError):
        board.annotate(pid="not a pid")
    doc = read_json(layout.status_file(JOB))
    assert doc is not None and doc["state"] == "STARTING" and "reason" not in doc


def test_set_state_writes_extra_fields(board: StatusBoard, layout: StateLayout) -> None:
    board.set_state("FAILED", error="boom")
    doc = read_json(layout.status_file(JOB))
    assert doc is not None and (doc["state"], doc["error"]) == ("FAILED", "boom")


def test_a_sealed_board_writes_the_status_no_more(board: StatusBoard, layout: StateLayout) -> None:
    board.declare_stage("vehicles")
    board.set_state("STOPPED")
    board.seal()
    successor = {**status_like("driver-20260101000000-0002"), "state": "STARTING"}
    write_json_atomic(layout.status_file(JOB), successor)
    board.record_progress(progress("vehicles", 7))  # a late event of the stopped stage
    board.set_state("FAILED", error="shut down")
    assert read_json(layout.status_file(JOB)) == successor
    history = layout.status_history(JOB).read_text().splitlines()
    assert json.loads(history[-1])["batch_id"] == 7  # the batch happened: history keeps it


def status_like(driver_id: str) -> dict[str, Any]:
    return {"job": JOB, "driver_id": driver_id, "version": "4", "stages": {}}


def test_late_rows_accumulate_per_stage(board: StatusBoard) -> None:
    board.declare_stage("vehicles")
    board.declare_stage("vehicle-stats-1m")
    board.record_progress(progress("vehicle-stats-1m", 0, operators=((5, 3), (1, 1))))
    board.record_progress(progress("vehicles", 0))
    board.record_progress(progress("vehicle-stats-1m", 1, operators=((6, 2), (1, 0))))
    board.record_progress(progress("vehicle-stats-1m", 2, operators=((6, 0), (1, 0))))
    stages = board.snapshot().stages
    assert stages["vehicle-stats-1m"].late_rows == 6
    assert stages["vehicles"].late_rows == 0


def test_failed_batches_are_counted_per_stage_and_kept_by_progress(
    board: StatusBoard, layout: StateLayout
) -> None:
    board.declare_stage("vehicles")
    board.record_failure("vehicles", "Connection reset by peer")
    board.record_progress(progress("vehicles", 4))
    board.record_failure("vehicles", "database is locked")
    stage = read_json(layout.status_file(JOB))["stages"]["vehicles"]
    assert stage["failed_batches"] == 2 and stage["batch_id"] == 4
    assert stage["last_failure"]["error"] == "database is locked"


def test_status_history_gets_one_line_per_progress(board: StatusBoard, layout: StateLayout) -> None:
    board.declare_stage("vehicles")
    board.declare_stage("vehicle-stats-1m")
    feed = [("vehicles", 0), ("vehicle-stats-1m", 0), ("vehicles", 1), ("vehicles", 2)]
    for name, batch in feed:
        board.record_progress(progress(name, batch))
    lines = history(layout)
    assert [(line["stage"], line["batch_id"]) for line in lines] == feed
    assert [line["state"] for line in lines] == ["STARTING", "RUNNING", "RUNNING", "RUNNING"]
    assert all("late_rows" in line and "sources" in line for line in lines)


def test_progress_of_an_undeclared_or_unnamed_stage(board: StatusBoard) -> None:
    board.declare_stage("vehicles")
    unnamed = progress("x", 0)
    del unnamed["name"]
    board.record_progress(unnamed)
    stages = board.snapshot().stages
    assert stages["?"].batch_id == 0
    assert stages["vehicles"].batch_id is None
    assert board.snapshot().state == "STARTING"


def test_no_temp_files_left_beside_the_status(board: StatusBoard, layout: StateLayout) -> None:
    board.declare_stage("vehicles")
    for batch in range(5):
        board.record_progress(progress("vehicles", batch))
    assert sorted(p.name for p in layout.job_dir(JOB).iterdir()) == [
        "status-history.jsonl",
        "status.json",
    ]


# --- StatusListener ------------------------------------------------------------------------
def progress_event(doc: dict[str, Any] | str) -> SimpleNamespace:
    """The edge: what PySpark hands a listener (``event.progress.json`` is a JSON string)."""
    text = doc if isinstance(doc, str) else json.dumps(doc)
    return SimpleNamespace(progress=SimpleNamespace(json=text, name="vehicles"))


def test_listener_records_progress(board: StatusBoard) -> None:
    board.declare_stage("vehicles")
    StatusListener(board).onQueryProgress(progress_event(progress("vehicles", 3)))
    snap = board.snapshot()
    assert (snap.state, snap.stages["vehicles"].batch_id) == ("RUNNING", 3)


def test_listener_never_raises_on_bad_progress(
    board: StatusBoard, caplog: pytest.LogCaptureFixture
) -> None:
    StatusListener(board).onQueryProgress(progress_event("{not json"))
    assert "could not record progress of vehicles" in caplog.text
    assert board.snapshot().stages == {}


def test_an_idle_restored_stage_counts_as_ready(board: StatusBoard, layout: StateLayout) -> None:
    """A stage restored from a savepoint may have no new data: idle is ready, not stuck."""
    board.declare_stage("vehicles", stateful=False)
    board.declare_stage("vehicle-stats-1m", stateful=True)
    listener = StatusListener(board)
    listener.onQueryStarted(SimpleNamespace(id="q1", runId="r1", name="vehicle-stats-1m"))
    board.record_progress(progress("vehicles", 3))
    assert read_json(layout.status_file(JOB))["state"] == "STARTING"
    listener.onQueryIdle(SimpleNamespace(id="q1", runId="r1", timestamp="t"))
    doc = read_json(layout.status_file(JOB))
    assert doc["state"] == "RUNNING"
    assert (
        doc["stages"]["vehicle-stats-1m"]["ready"]
        and doc["stages"]["vehicle-stats-1m"]["batch_id"] is None
    )


def test_listener_on_a_real_query_crosses_without_java_exceptions(
    spark: Any, layout: StateLayout, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Registered on a real session, the listener records batches and idleness, and no event
    raises a Java exception on the way (PySpark's own bridge raises one per map it copies, each
    converted by class look-ups that scan every jar: a third of a driver's CPU)."""
    import pyspark.errors.exceptions.captured as captured

    converted: list[str] = []
    original = captured._convert_exception

    def counting(e: Any) -> Any:
        converted.append(str(e)[:200])
        return original(e)

    monkeypatch.setattr(captured, "_convert_exception", counting)
    board = StatusBoard(layout, JOB, IDENTITY)
    board.declare_stage("ticks")
    listener = StatusListener(board)
    spark.streams.addListener(listener)
    query = (
        spark.readStream.format("rate").option("rowsPerSecond", 5).load()
        .writeStream.queryName("ticks").format("noop")
        .option("checkpointLocation", str(tmp_path / "ticks"))
        .trigger(processingTime="0.2 seconds").start()
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while (board.snapshot().stages["ticks"].batch_id or 0) < 2:
            assert time.monotonic() < deadline, "no progress recorded within 60 s"
            assert query.exception() is None
            time.sleep(0.1)
    finally:
        query.stop()
        spark.streams.removeListener(listener)
    history = (layout.job_dir(JOB) / "status-history.jsonl").read_text().splitlines()
    assert json.loads(history[-1])["stage"] == "ticks"
    assert converted == []


def test_the_sources_state_is_merged_into_the_status(
    board: StatusBoard, layout: StateLayout
) -> None:
    reader = SourceState("fleetsim-beta", str(layout.sources_state_dir(JOB)))
    board.refresh_sources()
    assert (read_json(layout.status_file(JOB)) or {}).get("sources_state", {}) == {}
    reader.degraded("http://127.0.0.1:1/pings did not answer (ConnectionError)")
    board.refresh_sources()
    state = read_json(layout.status_file(JOB))["sources_state"]["fleetsim-beta"]
    assert state["state"] == "degraded" and "did not answer" in state["reason"]
    reader.ok()
    board.refresh_sources()
    assert read_json(layout.status_file(JOB))["sources_state"]["fleetsim-beta"]["state"] == "ok"


def test_batches_slower_than_their_rows_are_counted_in_a_row(board: StatusBoard) -> None:
    board.declare_stage("vehicles")
    for batch, (got, done) in enumerate([(60.0, 30.0), (60.0, 50.0), (60.0, 240.0),
                                         (60.0, 30.0), (60.0, 30.0), (60.0, 20.0)]):  # fmt: skip
        board.record_progress(progress("vehicles", batch, input_rate=got, processed_rate=done))
    assert board.snapshot().stages["vehicles"].behind_batches == 3
    board.record_progress(progress("vehicles", 6, rows=0, input_rate=0.0, processed_rate=0.0))
    assert board.snapshot().stages["vehicles"].behind_batches == 0
