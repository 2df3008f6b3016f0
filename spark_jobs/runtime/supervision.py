"""Supervision: the driver runs a built job's stages and watches them until they end.

:func:`run` takes the job's lease (before anything is written: a second driver writes
nothing), starts one streaming query per stage (or opens the gate of a warm standby's armed
ones), runs the start-up hooks, and supervises: every :data:`SUPERVISE_POLL_S` it restarts a
stage that died of a transient error, heartbeats the lease, and handles control requests
(a savepoint, a stop), until one stage fails (raise) or all stop. A driver that had executors
and then none for :data:`NO_EXECUTOR_S` fails (:class:`ExecutorWatch`), so that its relaunch
registers a new application: a master recovering from a restart can lose track of an
application's executor and grant it no other (Spark 4.3: a worker registering again during
the recovery; its executor relaunched under the same id, refused by the driver as a duplicate,
removed, and none granted after), which left a job without a batch and without an error.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from spark_jobs.runtime.errors import JobFailed, short_error
from spark_jobs.runtime.gate import WarmGate
from spark_jobs.runtime.protocols import RunningJob
from spark_jobs.runtime.queries import listen, start_query
from spark_jobs.runtime.savepointing import resume_point
from spark_jobs.runtime.warmup import executor_count
from streamops_contract.state import lease

log = logging.getLogger("spark_jobs.runtime")

# Errors of a loaded machine, not of the job: Spark gives a new Python worker 10 s to connect.
TRANSIENT_ERRORS = (
    "Python worker failed to connect back",
    "Timed out while waiting for the Python worker to connect back",
)
MAX_STAGE_RESTARTS = 3
SUPERVISE_POLL_S = 0.2  # how often the driver looks at its queries and control requests
HOOK_DELAY_S = 60.0  # the longest start-up hooks wait for the stages' first batches
NO_EXECUTOR_S = 60.0  # 4 x the failover goal: a driver that lost its executors this long fails
EXECUTOR_CHECK_S = 5.0


class ExecutorWatch:
    """Fails the driver (:class:`JobFailed`) once it has had no executor for
    :data:`NO_EXECUTOR_S` after it had one. A driver never granted one (a job that waits for
    cores) is left waiting: health names what it waits for, and a relaunch would not help."""

    def __init__(self, job: str, count: Callable[[], int],
                 clock: Callable[[], float] = time.monotonic) -> None:  # fmt: skip
        self.job, self.count, self.clock = job, count, clock
        self.had = False
        self.none_since: float | None = None
        self.next_at = 0.0

    def check(self) -> None:
        now = self.clock()
        if now < self.next_at:
            return
        self.next_at = now + EXECUTOR_CHECK_S
        try:
            count = self.count()
        except Exception:  # the context is stopping: the queries' end will tell
            return
        if count > 0:
            if self.none_since is not None:
                log.info("job %s: %d executor(s) again after %.0fs without", self.job, count,
                         now - self.none_since)  # fmt: skip
            self.had, self.none_since = True, None
            return
        if not self.had:
            return
        if self.none_since is None:
            self.none_since = now
            log.warning("job %s: no executor left; the driver fails if the master grants none "
                        "within %.0fs, so that its relaunch registers anew", self.job,
                        NO_EXECUTOR_S)  # fmt: skip
        elif now - self.none_since >= NO_EXECUTOR_S:
            raise JobFailed(f"job {self.job}: no executor for {now - self.none_since:.0f}s "
                            "after it had some (the master granted none): the driver exits "
                            "to be relaunched with a new application")  # fmt: skip


def run(job: RunningJob, gate: WarmGate | None = None) -> None:
    """Start every stage (or open ``gate``, whose queries are armed) and block until one
    fails (raise) or all stop."""
    if not job.stages:
        raise ValueError(f"job {job.job} declared no stages")
    if job.fence.lease is None:  # a hot standby took it over already
        job.fence.acquire()  # before anything is written: a second driver writes nothing
    job.layout.pause_file(job.job).unlink(missing_ok=True)  # left by a crashed drain
    listen(job)
    for stage in job.stages:
        job.board.declare_stage(
            stage.name, stateful=stage.stateful, descriptor=job.describe(stage.name),
            **_resumed_at(job, stage.name),
        )  # fmt: skip
    if gate is not None and gate.armed is not None:
        queries = gate.open()
    else:
        queries = [start_query(job, stage, fresh=True) for stage in job.stages]
    for hook in job.hooks:
        threading.Thread(target=_run_hook, args=(job, hook), daemon=True).start()
    _supervise(job, queries)


def _resumed_at(job: RunningJob, stage: str) -> dict[str, Any]:
    """Where a stage with a checkpoint resumes, for the status until its first batch of
    this run: a restored stage with nothing new to read commits none, and would otherwise
    show no position."""
    try:
        return resume_point(Path(job.checkpoint_for(stage)))
    except (OSError, ValueError):  # unreadable: the first batch will tell
        log.warning("job %s: cannot read the checkpoint of stage %s", job.job, stage,
                    exc_info=True)  # fmt: skip
        return {}


def _run_hook(job: RunningJob, hook: Callable[[Any], object]) -> None:
    deadline = time.monotonic() + HOOK_DELAY_S
    while job.board.snapshot().state == "STARTING" and time.monotonic() < deadline:
        time.sleep(0.2)
    try:
        job.fence.check()
        hook(job)
    except Exception:  # a start-up report must never take the job down
        log.exception("job %s: start-up hook %s failed", job.job, hook)


def _restart_transient(job: RunningJob, queries: list[Any], restarts: dict[str, int]) -> None:
    """Restart a stage whose query died of a transient error (from its checkpoint: the
    sinks are idempotent, so the replayed batch changes nothing); fail after a few."""
    for i, q in enumerate(queries):
        if q.isActive or q.exception() is None:
            continue
        error = str(q.exception())
        job.board.record_failure(q.name, short_error(q.exception()))
        count = restarts.get(q.name, 0)
        if not any(t in error for t in TRANSIENT_ERRORS) or count >= MAX_STAGE_RESTARTS:
            raise JobFailed(f"stage {q.name} failed: {error}")
        restarts[q.name] = count + 1
        log.warning("job %s: stage %s died of a transient error (%s); restarting it from its "
                    "checkpoint (%d/%d)", job.job, q.name, short_error(q.exception())[:200],
                    count + 1, MAX_STAGE_RESTARTS)  # fmt: skip
        queries[i] = start_query(job, next(s for s in job.stages if s.name == q.name))


def _stop_all(queries: list[Any]) -> None:
    for q in queries:
        if q.isActive:
            q.stop()


def _supervise(job: RunningJob, queries: list[Any]) -> None:
    restarts: dict[str, int] = {}
    executors = ExecutorWatch(job.job, lambda: executor_count(job.spark))
    try:
        while any(q.isActive for q in queries):
            _restart_transient(job, queries, restarts)
            executors.check()
            job.fence.heartbeat()
            if job.control.poll({q.name: q for q in queries}) == "exit":
                job.release_lease()
                return
            time.sleep(SUPERVISE_POLL_S)
        failed = [q for q in queries if q.exception() is not None]
        if failed:
            raise JobFailed(f"stage {failed[0].name} failed: {failed[0].exception()}")
        job.board.set_state("STOPPED", stopped_at=time.time())
    except lease.Fenced:
        _stop_all(queries)
        raise  # the status now belongs to the lease's holder: leave it alone
    except BaseException as exc:
        job.board.set_state("FAILED", error=short_error(exc), stopped_at=time.time())
        _stop_all(queries)
        raise
