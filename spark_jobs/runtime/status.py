"""Job status: ``jobs/<job>/status.json`` rewritten after every batch of every stage.

The ops side reads it to find the job's driver and to judge health: per stage the last
batch id and time, input and processed rows/s, watermark, rows dropped as late, state rows,
source offsets and failed batches. One line per batch is also appended to
``status-history.jsonl``, from which processing gaps (upgrade, restart) are measured.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from dataclasses import dataclass
from typing import Any

from pyspark.sql.streaming import StreamingQueryListener

from spark_jobs.sources.source_state import merge_states
from streamops_contract.state.job_status import JobStatus, LastFailure, StageStatus
from streamops_contract.state.layout import StateLayout, append_jsonl, write_json_atomic

log = logging.getLogger("spark_jobs.status")


class StatusBoard:
    """The job's status document (:class:`~streamops.state.job_status.JobStatus`), kept in
    memory and written atomically on each change. Every field set is checked against the
    document's types, and a name the document does not declare is refused."""

    def __init__(self, layout: StateLayout, job: str, identity: dict[str, Any]) -> None:
        self.layout = layout
        self.job = job
        self._lock = threading.Lock()
        self._status = JobStatus(job=job, state="STARTING", started_at=time.time(), stages={})
        self._status.update(**identity)
        self._late: dict[str, int] = {}
        self._behind: dict[str, int] = {}
        self._sealed = False

    def set_state(self, state: str, **extra: Any) -> None:
        with self._lock:
            self._status.update(state=state, **extra)
            self._flush()

    def identify(self, **fields: Any) -> None:
        """Change who this run is (e.g. ``from_savepoint``); written with the next change, so
        a warm standby writes nothing before it holds the lease."""
        with self._lock:
            self._status.update(**fields)

    def annotate(self, **fields: Any) -> None:
        """Add job-level facts to the status (e.g. ``classpath_release``)."""
        with self._lock:
            self._status.update(**fields)
            self._flush()

    def declare_stage(self, stage: str, **info: Any) -> None:
        with self._lock:
            if stage not in self._status.stages:
                self._update_stage(stage, **info)
            self._flush()

    def record_idle(self, stage: str) -> None:
        """The stage's query is up and found no new data: ready, with nothing to do.

        Reported after every such trigger; the file is rewritten only when the stage turns
        idle."""
        with self._lock:
            entry = self._status.stages.get(stage) or StageStatus()
            now = time.time()
            turned_idle = not (entry.ready and entry.idle_since)
            self._update_stage(stage, ready=True, idle_since=entry.idle_since or now)
            if turned_idle:
                self._maybe_running()
                self._flush()

    def _update_stage(self, stage: str, **fields: Any) -> None:
        """Set fields of ``stage``'s entry, made (with no batch yet) if it has none."""
        entry = self._status.stages.get(stage) or StageStatus(batch_id=None)
        entry.update(**fields)
        self._status.stages[stage] = entry

    def _maybe_running(self) -> None:
        if self._status.state == "STARTING" and self._status.all_ready():
            self._status.state = "RUNNING"

    def record_progress(self, progress: dict[str, Any]) -> None:
        stage = progress.get("name") or "?"
        with self._lock:
            late_now = sum(
                int(op.get("numRowsDroppedByWatermark") or 0)
                for op in progress.get("stateOperators") or []
            )
            self._late[stage] = self._late.get(stage, 0) + late_now
            entry = summarize(progress)
            self._behind[stage] = self._behind.get(stage, 0) + 1 if _slower(entry) else 0
            entry.update(late_rows=self._late[stage], behind_batches=self._behind[stage],
                         ready=True, idle_since=None)  # fmt: skip
            self._update_stage(stage, **entry)
            self._maybe_running()
            self._flush()
            append_jsonl(
                self.layout.status_history(self.job),
                {
                    "stage": stage,
                    "state": self._status.state,
                    "version": self._status.version,
                    "driver_id": self._status.driver_id,
                    **entry,
                },  # fmt: skip
            )

    def record_failure(self, stage: str, error: str) -> None:
        """A batch of ``stage`` failed and took its query down (restarted from its checkpoint
        when the error is transient): counted in ``failed_batches`` with the last error, for
        the dashboard's metrics (the count restarts with the driver, as ``late_rows`` does)."""
        with self._lock:
            entry = self._status.stages.get(stage) or StageStatus()
            self._update_stage(
                stage,
                failed_batches=entry.failed_batches + 1,
                last_failure=LastFailure(at=time.time(), error=error[:500]),
            )
            self._flush()

    def refresh_sources(self) -> None:
        """Merge the state the job's source readers report (``sources_state``: per source
        ``ok``/``degraded`` since when and why, and the losses accepted); written when it
        changed. Called by the driver's supervision loop, so a degraded source shows even
        while no batch commits."""
        merged = merge_states(self.layout.sources_state_dir(self.job))
        with self._lock:
            if merged != self._status.sources_state:
                self._status.sources_state = merged
                self._flush()

    def seal(self) -> None:
        """Write the status file no more: this driver has stopped and given up the job's
        lease, and its successor's status may be there already (a late progress event of a
        stopped stage must not overwrite it)."""
        with self._lock:
            self._sealed = True

    def snapshot(self) -> JobStatus:
        """A copy of the document as it stands."""
        with self._lock:
            return self._status.model_copy(deep=True)

    def _flush(self) -> None:
        if self._sealed:
            return
        self._status.updated_at = time.time()
        write_json_atomic(self.layout.status_file(self.job), self._status.to_json())


def summarize(progress: dict[str, Any]) -> dict[str, Any]:
    """The fields of one ``StreamingQueryProgress`` (as JSON) that the ops side reads."""
    event_time = progress.get("eventTime") or {}
    return {
        "batch_id": progress.get("batchId"),
        "last_batch_at": time.time(),
        "batch_timestamp": progress.get("timestamp"),
        "num_input_rows": progress.get("numInputRows"),
        "input_rows_per_second": _num(progress.get("inputRowsPerSecond")),
        "processed_rows_per_second": _num(progress.get("processedRowsPerSecond")),
        "batch_duration_ms": (progress.get("durationMs") or {}).get("triggerExecution"),
        "durations_ms": progress.get("durationMs") or {},
        "watermark": event_time.get("watermark"),
        "state_rows": sum(
            int(op.get("numRowsTotal") or 0) for op in progress.get("stateOperators") or []
        ),
        "sources": [
            {
                "description": s.get("description"),
                "start_offset": s.get("startOffset"),
                "end_offset": s.get("endOffset"),
                "latest_offset": s.get("latestOffset"),
            }
            for s in progress.get("sources") or []
        ],
    }


def _slower(entry: dict[str, Any]) -> bool:
    """The batch processed its rows slower than they came: it took longer than the time
    since the trigger before it (Spark's two rates of one batch share its row count). Alone
    that is noise (a batch a little longer than the one before); in a row, the batches grow
    and so does what waits behind them."""
    got, done = entry.get("input_rows_per_second"), entry.get("processed_rows_per_second")
    if not entry.get("num_input_rows") or got is None or done is None:
        return False
    return bool(done < got)


def _num(value: Any) -> float | None:
    try:
        return round(float(value), 1)
    except (TypeError, ValueError):
        return None


@dataclass(frozen=True)
class ProgressJson:
    """A progress event's ``StreamingQueryProgress`` as Spark's JSON text."""

    json: str
    name: str | None = None


@dataclass(frozen=True)
class QueryEvent:
    """What :class:`StatusListener` reads of a started, progress, idle or terminated event."""

    id: str
    runId: str | None = None  # noqa: N815 (Spark's name, as PySpark's events have it)
    name: str | None = None
    progress: ProgressJson | None = None
    exception: str | None = None


class StatusListener(StreamingQueryListener):
    """Feeds every query's progress into the :class:`StatusBoard`.

    Registered through :class:`_JsonBridge`, not PySpark's own bridge: PySpark turns every
    progress event into Python objects field by field, with a JVM round trip per field and a
    Java exception (converted on the Python side by a dozen class look-ups that scan every jar)
    at the end of each map it copies; with three stages that took a third of the driver JVM's
    CPU. The bridge asks the JVM once for the progress's JSON text."""

    def __init__(self, board: StatusBoard) -> None:
        self.board = board
        self._names: dict[str, str] = {}
        self._bridge: Any = None

    @property
    def _jlistener(self) -> Any:  # what StreamingQueryManager.addListener registers
        if self._bridge is None:
            from pyspark import SparkContext

            jvm = SparkContext._jvm
            assert jvm is not None, "no active SparkContext"
            self._bridge = jvm.PythonStreamingQueryListenerWrapper(_JsonBridge(self))
        return self._bridge

    def onQueryStarted(self, event: Any) -> None:
        self._names[str(event.id)] = event.name
        log.info("stage %s started (run %s)", event.name, event.runId)

    def onQueryProgress(self, event: Any) -> None:
        try:
            self.board.record_progress(json.loads(event.progress.json))
        except Exception:  # a status write must never kill the query's listener bus
            log.exception("could not record progress of %s", event.progress.name or "a stage")

    def onQueryIdle(self, event: Any) -> None:
        """No new data: the stage is up and ready (a restored stage may have nothing to do)."""
        name = self._names.get(str(event.id))
        if name:
            try:
                self.board.record_idle(name)
            except Exception:  # a status write must never kill the listener bus
                log.exception("could not record idleness of %s", name)

    def onQueryTerminated(self, event: Any) -> None:
        if event.exception:
            log.error("stage query %s failed: %s", event.id, event.exception)
        else:
            log.info("stage query %s stopped", event.id)


class _JsonBridge:
    """The Py4J implementation of Spark's ``PythonStreamingQueryListener`` for
    :class:`StatusListener`: each event crosses with the few JVM calls it needs."""

    def __init__(self, listener: StatusListener) -> None:
        self.listener = listener

    def onQueryStarted(self, jevent: Any) -> None:
        self.listener.onQueryStarted(
            QueryEvent(str(jevent.id().toString()), str(jevent.runId().toString()),
                       name=jevent.name())
        )  # fmt: skip

    def onQueryProgress(self, jevent: Any) -> None:
        self.listener.onQueryProgress(
            QueryEvent("", progress=ProgressJson(str(jevent.progress().json())))
        )

    def onQueryIdle(self, jevent: Any) -> None:
        self.listener.onQueryIdle(QueryEvent(str(jevent.id().toString())))

    def onQueryTerminated(self, jevent: Any) -> None:
        error = jevent.exception()
        self.listener.onQueryTerminated(
            QueryEvent(str(jevent.id().toString()),
                       exception=str(error.get()) if error.isDefined() else None)
        )  # fmt: skip

    class Java:
        implements = ["org.apache.spark.sql.streaming.PythonStreamingQueryListener"]
