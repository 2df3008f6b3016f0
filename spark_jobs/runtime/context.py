"""JobContext: the driver side of a job — its stages, checkpoints, trigger and status.

A job module exposes ``build(ctx: JobContext) -> None`` that declares stages with
:meth:`JobContext.add_stage`; :meth:`JobContext.run` starts one streaming query per stage
(query name = stage name, checkpoint ``<state>/checkpoints/<job>/<stage>``) and supervises
them until one fails or all stop.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import socket
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from spark_jobs.runtime.control import ControlLoop
from spark_jobs.runtime.protocols import BatchSink, Stage
from spark_jobs.runtime.savepointing import resume_point
from spark_jobs.runtime.status import StatusBoard, StatusListener
from spark_jobs.sources.positions import gate_waiting_dir
from streamops import lease
from streamops.checkpoint_cut import last_batch
from streamops.layout import StateLayout
from streamops.names import check_name
from streamops.spec import JobSpec, ProcessingGuarantee

log = logging.getLogger("spark_jobs.runtime")
_DRIVER_ID = re.compile(r"^driver-\d+-\d+$")

# Errors of a loaded machine, not of the job: Spark gives a new Python worker 10 s to connect.
TRANSIENT_ERRORS = (
    "Python worker failed to connect back",
    "Timed out while waiting for the Python worker to connect back",
)
MAX_STAGE_RESTARTS = 3
SUPERVISE_POLL_S = 0.2  # how often the driver looks at its queries and control requests
HOOK_DELAY_S = 60.0  # the longest start-up hooks wait for the stages' first batches


def short_error(exc: BaseException) -> str:
    """The error without Spark's query dump (logical plan), for status files and logs."""
    text = str(exc).split("=== Streaming Query ===", 1)[0].strip()
    return text[:4000]


class JobFailed(RuntimeError):
    """A stage's streaming query terminated with an error."""


class JobContext:
    def __init__(
        self,
        spark: SparkSession,
        spec: JobSpec,
        layout: StateLayout,
        *,
        from_savepoint: str | None = None,
        start_positions: dict[str, dict[str, Any]] | None = None,
        start_positions_file: Path | None = None,
        gate_file: Path | None = None,
        rehearsal: bool = False,
    ) -> None:
        self.spark = spark
        self.rehearsal = rehearsal
        self.spec = spec
        self.layout = layout
        self.args = spec.resolved_args(state_root=str(layout.root))
        self.stages: list[Stage] = []
        self.from_savepoint = from_savepoint
        self.start_positions = start_positions or {}
        self.start_positions_file = start_positions_file
        self.gate_file = gate_file
        self._armed: list[Any] | None = None
        self._armed_empty: set[str] = set()  # armed on a checkpoint without a batch
        self._listening = False
        self._descriptors: dict[str, dict[str, Any] | None] = {}
        self.board = StatusBoard(layout, spec.name, self._identity())
        self.control = ControlLoop(self)
        self.lease: lease.Lease | None = None
        self._last_heartbeat = 0.0
        self._on_started: list[Callable[[JobContext], object]] = []

    def on_started(self, hook: Callable[[JobContext], object]) -> None:
        """Run ``hook(ctx)`` once the job holds its lease and every stage has committed its
        first batch or found nothing to do (at most :data:`HOOK_DELAY_S` after the stages
        started; in a thread: it may run Spark jobs, which then do not slow the first batches
        down). Never during a describe or a warm standby's dry build, and never in a fenced
        duplicate, so work that writes belongs here rather than in ``build``."""
        self._on_started.append(hook)

    def source_options(self, source_id: str) -> dict[str, str]:
        """Options every runtime-aware source of this job takes.

        ``start_offset`` is where a stage without a checkpoint starts (a stage added by an
        upgrade starts at the savepoint's position); Spark ignores it once a checkpoint
        exists, so it is safe to give to every stage. ``start_offsets_file`` is read when the
        query starts instead (a warm standby builds its stages before the savepoint exists).
        ``rehearsal`` marks the stages of a warm standby's rehearsal (they read only the
        newest data, :mod:`spark_jobs.sources.positions`); ``gate_file`` holds the sources of
        armed queries back until :meth:`run` opens the gate (:meth:`arm`). ``state_dir`` is
        where the sources report their upstream's state, ``on_source_reset`` the spec's choice
        when an upstream was reset (:mod:`spark_jobs.sources.source_state`), ``spool_dir``
        where they keep what they fetched for a planned batch (:mod:`spark_jobs.sources.spool`).
        """
        opts = {
            "source_id": source_id,
            "pause_file": str(self.layout.pause_file(self.job)),
            "on_source_reset": self.spec.on_source_reset,
        }
        if not self.rehearsal:
            opts["state_dir"] = str(self.layout.sources_state_dir(self.job))
            opts["spool_dir"] = str(self.layout.spool_dir(self.job))
        if source_id in self.start_positions:
            opts["start_offset"] = json.dumps(self.start_positions[source_id])
        if self.start_positions_file is not None:
            opts["start_offsets_file"] = str(self.start_positions_file)
        if self.gate_file is not None:
            opts["gate_file"] = str(self.gate_file)
        if self.rehearsal:
            opts["rehearsal"] = "true"
        return opts

    def restored_from(self, savepoint: str) -> None:
        """Record the savepoint a warm standby was released from (its stages are built; their
        sources read the start positions from ``start_positions_file``)."""
        self.from_savepoint = savepoint
        self.board.identify(from_savepoint=savepoint)

    @property
    def job(self) -> str:
        return self.spec.name

    def _identity(self) -> dict[str, Any]:
        cwd = Path.cwd().name
        sc = self.spark.sparkContext
        return {
            "version": self.spec.version,
            "driver_id": cwd if _DRIVER_ID.match(cwd) else None,
            "app_id": sc.applicationId,
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "from_savepoint": self.from_savepoint,
            "processing_guarantee": self.spec.processing_guarantee.value,
            "trigger_interval": self.spec.trigger_interval,
        }

    def add_stage(
        self,
        name: str,
        frame: DataFrame,
        sink: BatchSink,
        *,
        output_mode: str = "append",
        stateful: bool = False,
        dry_sink: bool = False,
    ) -> None:
        """Declare a stage. ``dry_sink``: the sink, built from a context with ``rehearsal``
        set, computes what it would write and writes nothing; a warm standby's rehearsal then
        runs it (warming up its code) instead of Spark's ``noop`` sink."""
        check_name("stage", name)
        if any(s.name == name for s in self.stages):
            raise ValueError(f"stage {name!r} declared twice in job {self.job}")
        self.stages.append(Stage(name, frame, sink, output_mode, stateful, dry_sink))

    def describe(self, stage: str) -> dict[str, Any] | None:
        """The stage's state descriptor (operators, keys, aggregates), for plans and manifests
        (computed once: a stage's plan does not change while the job runs)."""
        if stage not in self._descriptors:
            self._descriptors[stage] = self._describe(stage)
        return self._descriptors[stage]

    def _describe(self, stage: str) -> dict[str, Any] | None:
        try:
            from spark_jobs.runtime.describe import describe_stage

            found = next(s for s in self.stages if s.name == stage)
            return describe_stage(found.frame, output_mode=found.output_mode)
        except Exception:  # a stage we cannot describe is planned as unknown, never guessed
            log.warning("could not describe stage %s of %s", stage, self.job, exc_info=True)
            return None

    def checkpoint_for(self, stage: str) -> str:
        if self.spec.processing_guarantee is ProcessingGuarantee.NONE:
            # No guarantee: state is not kept across restarts; each run starts afresh
            # (emptied when the run first starts the stage, :meth:`_start`).
            return str(Path(tempfile.gettempdir()) / f"streamops-{self.job}-{stage}-{os.getpid()}")
        return str(self.layout.checkpoint(self.job, stage))

    def arm(self) -> None:
        """Start every stage's query now, held at the gate (a warm standby, before it is
        released): the queries' sources start up (a Python process each) and then wait for
        ``gate_file``, and Spark reads a query's checkpoint only after its sources are up, so
        the savepoint may still be restored into the checkpoints. :meth:`run` opens the gate
        once the lease is held. Writes nothing but the empty checkpoint of a new stage."""
        if self.gate_file is None:
            raise ValueError(f"job {self.job}: only a context with a gate_file can be armed")
        if not self.stages:
            raise ValueError(f"job {self.job} declared no stages")
        self.gate_file.unlink(missing_ok=True)  # a relaunched standby waits for its lease too
        shutil.rmtree(gate_waiting_dir(self.gate_file), ignore_errors=True)
        self._listen()
        self._armed_empty = {s.name for s in self.stages if not self._has_batches(s.name)}
        self._armed = [self._start(stage, "armed", fresh=True) for stage in self.stages]

    def wait_armed(self, timeout: float = 60.0) -> float:
        """Wait until every armed query is held at the gate, its sources up; the seconds it
        took. A query that died meanwhile fails the standby (the old version runs on)."""
        if self._armed is None or self.gate_file is None:
            raise ValueError(f"job {self.job}: nothing armed")
        started = time.monotonic()
        waiting = gate_waiting_dir(self.gate_file)
        while True:
            dead = [q for q in self._armed if not q.isActive]
            if dead:
                error = dead[0].exception()
                raise JobFailed(f"armed stage {dead[0].name} ended before the gate opened: "
                                f"{short_error(error) if error else 'stopped'}")  # fmt: skip
            held = len(list(waiting.iterdir())) if waiting.is_dir() else 0
            if held >= len(self._armed):
                return round(time.monotonic() - started, 2)
            if time.monotonic() - started > timeout:
                log.warning("job %s: %d of %d armed stage(s) held at the gate after %.0fs; the "
                            "others start up when it opens", self.job, held, len(self._armed),
                            timeout)  # fmt: skip
                return round(time.monotonic() - started, 2)
            time.sleep(0.1)

    def _open_gate(self, armed: list[Any]) -> list[Any]:
        """Let the armed queries read their checkpoints. Spark remembers whether a checkpoint
        had a batch when its query started: a stage armed on an empty checkpoint that has
        batches now (the old version committed its first batch after the standby armed) fails
        at once, and is started again."""
        stale = {
            s.name for s in self.stages if s.name in self._armed_empty and self._has_batches(s.name)
        }
        gate = self.gate_file
        assert gate is not None  # only a context with a gate is armed (arm())
        gate.parent.mkdir(parents=True, exist_ok=True)
        gate.touch()
        shutil.rmtree(gate_waiting_dir(gate), ignore_errors=True)
        log.info("job %s v%s: gate opened, %d armed stage(s) read their checkpoints", self.job,
                 self.spec.version, len(armed) - len(stale))  # fmt: skip
        queries = list(armed)
        for i, stage in enumerate(self.stages):
            if stage.name in stale:
                try:
                    queries[i].awaitTermination(60)
                except Exception as exc:  # expected: Spark refuses the changed checkpoint
                    log.info("job %s: armed stage %s ended as expected: %s", self.job,
                             stage.name, short_error(exc)[:200])  # fmt: skip
                if queries[i].isActive:
                    queries[i].stop()
                queries[i] = self._start(
                    stage, "started again (its checkpoint was empty when armed)"
                )
        return queries

    def _has_batches(self, stage: str) -> bool:
        return last_batch(Path(self.checkpoint_for(stage)) / "offsets") is not None

    def _listen(self) -> None:
        if not self._listening:
            self.spark.streams.addListener(StatusListener(self.board))
            self._listening = True

    def run(self) -> None:
        """Start every stage (or open the gate of the armed ones) and block until one fails
        (raise) or all stop."""
        if not self.stages:
            raise ValueError(f"job {self.job} declared no stages")
        if self.lease is None:  # a hot standby took it over already
            self.acquire_lease()  # before anything is written: a second driver writes nothing
        self.layout.pause_file(self.job).unlink(missing_ok=True)  # left by a crashed drain
        self._listen()
        for stage in self.stages:
            self.board.declare_stage(
                stage.name, stateful=stage.stateful, descriptor=self.describe(stage.name),
                **self._resumed_at(stage.name),
            )  # fmt: skip
        if self._armed is not None:
            queries = self._open_gate(self._armed)
        else:
            queries = [self._start(stage, fresh=True) for stage in self.stages]
        for hook in self._on_started:
            threading.Thread(target=self._run_hook, args=(hook,), daemon=True).start()
        self._supervise(queries)

    def _resumed_at(self, stage: str) -> dict[str, Any]:
        """Where a stage with a checkpoint resumes, for the status until its first batch of
        this run: a restored stage with nothing new to read commits none, and would otherwise
        show no position."""
        try:
            return resume_point(Path(self.checkpoint_for(stage)))
        except (OSError, ValueError):  # unreadable: the first batch will tell
            log.warning("job %s: cannot read the checkpoint of stage %s", self.job, stage,
                        exc_info=True)  # fmt: skip
            return {}

    def _run_hook(self, hook: Callable[[JobContext], object]) -> None:
        deadline = time.monotonic() + HOOK_DELAY_S
        while self.board.snapshot().get("state") == "STARTING" and time.monotonic() < deadline:
            time.sleep(0.2)
        try:
            self._check_lease()
            hook(self)
        except Exception:  # a start-up report must never take the job down
            log.exception("job %s: start-up hook %s failed", self.job, hook)

    def _start(self, stage: Stage, how: str = "started", *, fresh: bool = False) -> Any:
        """Start ``stage``'s query (``fresh``: its first start in this run)."""
        if fresh and self.spec.processing_guarantee is ProcessingGuarantee.NONE:
            shutil.rmtree(self.checkpoint_for(stage.name), ignore_errors=True)
        query = (
            stage.frame.writeStream.queryName(stage.name)
            .option("checkpointLocation", self.checkpoint_for(stage.name))
            .outputMode(stage.output_mode)
            .trigger(processingTime=f"{self.spec.trigger_seconds} seconds")
            .foreachBatch(self._fenced(stage.sink))
            .start()
        )
        log.info("job %s v%s: stage %s %s", self.job, self.spec.version, stage.name, how)
        return query

    def _restart_transient(self, queries: list[Any], restarts: dict[str, int]) -> None:
        """Restart a stage whose query died of a transient error (from its checkpoint: the
        sinks are idempotent, so the replayed batch changes nothing); fail after a few."""
        for i, q in enumerate(queries):
            if q.isActive or q.exception() is None:
                continue
            error = str(q.exception())
            self.board.record_failure(q.name, short_error(q.exception()))
            count = restarts.get(q.name, 0)
            if not any(t in error for t in TRANSIENT_ERRORS) or count >= MAX_STAGE_RESTARTS:
                raise JobFailed(f"stage {q.name} failed: {error}")
            restarts[q.name] = count + 1
            log.warning("job %s: stage %s died of a transient error (%s); restarting it from its "
                        "checkpoint (%d/%d)", self.job, q.name, short_error(q.exception())[:200],
                        count + 1, MAX_STAGE_RESTARTS)  # fmt: skip
            queries[i] = self._start(next(s for s in self.stages if s.name == q.name))

    # --- fencing ------------------------------------------------------------------------
    @property
    def holder(self) -> str:
        ident = self.board.snapshot()
        return str(ident.get("driver_id") or f"{ident['host']}:{ident['pid']}")

    def acquire_lease(self, wait: float | None = None) -> None:
        """Take the job's lease; wait out a stale holder (a relaunch after a crash)."""
        deadline = time.monotonic() + (wait if wait is not None else lease.DEFAULT_TTL * 1.5)
        waited = False
        while True:
            try:
                self.lease = lease.acquire(self.layout, self.job, self.holder,
                                           app_id=self.board.snapshot().get("app_id"))  # fmt: skip
                log.info("job %s: lease epoch %s taken by %s", self.job, self.lease.epoch,
                         self.holder)  # fmt: skip
                return
            except lease.Fenced:
                if time.monotonic() > deadline:
                    raise
                if not waited:
                    log.info("job %s: lease held by a live driver; waiting until it is released "
                             "or expires", self.job)  # fmt: skip
                waited = True
                time.sleep(0.25)

    def _check_lease(self) -> None:
        if self.lease is not None:
            lease.check(self.layout, self.lease)

    def _heartbeat(self) -> None:
        if self.lease is not None and time.monotonic() - self._last_heartbeat >= 2.0:
            self.lease = lease.heartbeat(self.layout, self.lease)
            self._last_heartbeat = time.monotonic()
            try:
                self.board.refresh_sources()
            except OSError:  # a status detail: never a reason to stop the job
                log.warning("job %s: cannot read its sources' state", self.job, exc_info=True)

    def release_lease(self) -> None:
        if self.lease is not None:
            lease.release(self.layout, self.lease)
            self.lease = None

    def _fenced(self, sink: BatchSink) -> BatchSink:
        def write(batch: DataFrame, batch_id: int) -> None:
            self._check_lease()  # a driver that lost its lease writes nothing
            sink(batch, batch_id)

        return write

    def _supervise(self, queries: list[Any]) -> None:
        restarts: dict[str, int] = {}
        try:
            while any(q.isActive for q in queries):
                self._restart_transient(queries, restarts)
                self._heartbeat()
                if self.control.poll({q.name: q for q in queries}) == "exit":
                    self.release_lease()
                    return
                time.sleep(SUPERVISE_POLL_S)
            failed = [q for q in queries if q.exception() is not None]
            if failed:
                raise JobFailed(f"stage {failed[0].name} failed: {failed[0].exception()}")
            self.board.set_state("STOPPED", stopped_at=time.time())
        except lease.Fenced:
            for q in queries:
                if q.isActive:
                    q.stop()
            raise  # the status now belongs to the lease's holder: leave it alone
        except BaseException as exc:
            self.board.set_state("FAILED", error=short_error(exc), stopped_at=time.time())
            for q in queries:
                if q.isActive:
                    q.stop()
            raise
