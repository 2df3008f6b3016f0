"""Health checks of the cluster and its jobs: gather once, judge each check, keep a history.

:func:`~streamops.health.gather.gather` does all the I/O (the master's JSON, the job
registry, pid files and worker logs, the sources' probes, the stores) and returns an
:class:`HealthInputs`, a plain value; every check is then a pure function of it, so a table of
observations tests them all.

Five groups of checks, each giving ``ok`` / ``warn`` / ``fail`` with a message that names what
is wrong (``worker worker-2 is DEAD``, ``job fleet-pings: stage vehicles committed no batch
for 312 s (limit 120 s)``):

- ``cluster``  — the master answers and is ALIVE; the expected number of workers is ALIVE
  (the last scale's count, else the profile's); no node agent gave up restarting its daemon
  or restarted it lately (:mod:`streamops.health.daemons`); no cluster restart or scale is
  unfinished;
- ``jobs``     — every job that should run runs (declared = its last submission was not
  followed by a cancel or a deliberate stop; and every job a procedure in progress
  stopped); a FAILED status with its error; no upgrade or restart is unfinished (each one
  named with its owner, step, since when and what resumes it:
  :mod:`streamops.health.procedures`);
- ``progress`` — per stage: age of the last committed batch, processed vs input rate;
- ``sources``  — per source (:mod:`streamops.health.sources`, probed by
  :mod:`streamops.world.source_probes`): a reset, replaced or truncated upstream (fail, naming both
  positions), a degraded source (warn, then fail), losses and late files the sources
  counted, and the backlog;
- ``sinks``    — the newest ``updated_at`` written to the job's store.

Results, reports, thresholds and the history (``<state>/health/history.jsonl``) are in
:mod:`streamops.health.report`, re-exported here.

No check can crash a run (:mod:`streamops.health.crash`): an exception while judging a job
fails that job's check of its group, one while judging a group fails the group, one while
gathering fails every group asked; each such ``fail`` names the exception and where it was
raised, and the rest of the report still comes.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Sequence

from streamops.cluster.client import WorkerInfo
from streamops.exceptions import StreamopsError
from streamops.health.capacity import check_cluster_capacity, check_job_capacity
from streamops.health.crash import crashed, isolated
from streamops.health.daemons import check_daemons
from streamops.health.gather import GROUPS, declared_jobs, gather, newest_write
from streamops.health.procedures import ProcedureSeen, procedure_result
from streamops.health.report import (
    CheckResult,
    HealthInputs,
    HealthReport,
    Level,
    SinkSeen,
    Thresholds,
    WorkersSeen,
    read_history,
    record,
)
from streamops.health.sources import check_sources
from streamops.job_view import JobView
from streamops.settings import Settings
from streamops.state.job_status import StageStatus

log = logging.getLogger("streamops.health.checks")

__all__ = [
    "GROUPS",
    "CheckResult",
    "HealthReport",
    "Level",
    "HealthInputs",
    "Thresholds",
    "declared_jobs",
    "gather",
    "judge",
    "newest_write",
    "check_sources",
    "read_history",
    "record",
    "run_checks",
]


# --- checks -----------------------------------------------------------------------------
def check_cluster(obs: HealthInputs) -> list[CheckResult]:
    s = obs.settings
    procedures = [procedure_result(p, obs.now) for p in obs.procedures if p.job is None]
    supervised = isolated("cluster", "daemons", lambda: _check_daemons(obs))
    if obs.master is None:
        return [
            *supervised,
            CheckResult(
                "cluster", "master", Level.FAIL, f"Spark master at {s.webui_url} does not answer"
            ),
            *procedures,
        ]
    status = str(obs.master.get("status", ""))
    master = CheckResult(
        "cluster",
        "master",
        Level.OK if status == "ALIVE" else Level.FAIL,
        f"master {s.master_url} is {status or 'in an unknown state'}",
    )
    return [*supervised, master, *isolated("cluster", "workers", lambda: [_check_workers(obs)]),
            *isolated("cluster", "capacity", lambda: check_cluster_capacity(obs),
                      "the capacity check"),
            *procedures]  # fmt: skip


def _check_daemons(obs: HealthInputs) -> list[CheckResult]:
    """What the node agents' supervisors did (:mod:`streamops.health.daemons`); nothing
    when no agent keeps a record (or they were not gathered)."""
    if obs.daemons_error:
        return [CheckResult("cluster", "daemons", Level.FAIL,
                            f"the supervision records could not be read: {obs.daemons_error}")]
    return [check_daemons(obs.daemons, obs.now)] if obs.daemons else []


def _check_workers(obs: HealthInputs) -> CheckResult:
    assert obs.master is not None
    seen = obs.workers or WorkersSeen(obs.thresholds.expected_workers or 0)  # none gathered
    if seen.error:
        return CheckResult("cluster", "workers", Level.FAIL,
                           f"the workers could not be gathered: {seen.error}")  # fmt: skip
    entries = [WorkerInfo.from_json(w) for w in obs.master.get("workers") or []]
    alive = [w for w in entries if w.state == "ALIVE"]
    problems = [
        f"worker {w.name} is {'not registered with the master' if w.id is None else w.state}"
        for w in seen.workers
        if w.name and w.state != "ALIVE"
    ]
    if len(alive) < seen.expected:
        reported = {w.name for w in seen.workers if w.name}
        dead = _dead_workers(seen.log_names, entries, reported)
        problems += [f"worker {name} is DEAD" for name in dead]
        problems.append(f"{len(alive)} of {seen.expected} expected workers ALIVE")
    if problems:
        return CheckResult("cluster", "workers", Level.FAIL, "; ".join(problems))
    return CheckResult(
        "cluster", "workers", Level.OK, f"{len(alive)} workers ALIVE (expected {seen.expected})"
    )


def _dead_workers(
    log_names: dict[str, str], entries: list[WorkerInfo], skip: set[str]
) -> list[str]:
    """Names of the master's DEAD workers not replaced since: the local name when a worker
    log of this state root started at that address (``worker-2``), else ``host:port``."""
    alive = {log_names.get(f"{w.host}:{w.port}") for w in entries if w.state == "ALIVE"}
    out: list[str] = []
    for w in sorted(entries, key=lambda e: e.id, reverse=True):
        name = log_names.get(f"{w.host}:{w.port}", f"{w.host}:{w.port}")
        if w.state == "DEAD" and name not in alive | skip and name not in out:
            out.append(name)
    return out[:5]


def check_jobs(obs: HealthInputs) -> list[CheckResult]:
    """Every job that should run (declared, or stopped by a procedure in progress) runs, and
    every procedure of a job in progress fails (it stopped the job, or is about to)."""
    busy = {p.job: p for p in obs.procedures if p.job and not p.closed}
    out: list[CheckResult] = []
    for name in obs.jobs:
        out += isolated("jobs", name, lambda n=name: [_job(obs, n, busy.get(n))],
                        f"job {name}: its check")  # fmt: skip
    out += isolated("jobs", "capacity", lambda: check_job_capacity(obs),
                    "the check of the jobs' cores")  # fmt: skip
    out += [procedure_result(p, obs.now) for p in obs.procedures if p.job]
    return out or [CheckResult("jobs", "jobs", Level.OK, _no_declared_job(obs))]


def _job(obs: HealthInputs, name: str, busy: ProcedureSeen | None) -> CheckResult:
    if obs.master is None:
        return _check_job_without_master(obs, name, busy)
    return _check_job(name, obs.views.get(name), busy)


def _no_declared_job(obs: HealthInputs) -> str:
    if not obs.dormant:
        return "no declared job"
    why = "; ".join(f"{name} {reason}" for name, reason in sorted(obs.dormant.items()))
    return f"no declared job ({why})"


def _stopped_by(busy: ProcedureSeen | None) -> str:
    return f"; stopped by the {busy.label}, which has not finished" if busy else ""


def _check_job(name: str, view: JobView | None, busy: ProcedureSeen | None = None) -> CheckResult:
    if view is None:
        return CheckResult("jobs", name, Level.FAIL, f"job {name} is unknown to this state root")
    error = view.status.error if view.status.state == "FAILED" else None
    last_error = error.splitlines()[0][:300] if error else None
    if not view.is_live:
        ended = f" (driver ended {view.driver_state})" if view.driver_state else ""
        detail = f"; its last error: {last_error}" if last_error else ""
        message = f"job {name} is not running: state {view.state}{ended}{detail}"
        return CheckResult("jobs", name, Level.FAIL, message + _stopped_by(busy))
    if last_error:
        return CheckResult("jobs", name, Level.FAIL, f"job {name} FAILED: {last_error}")
    if view.status.state == "STOPPED" and view.status.driver_id == view.driver_id:
        saved = view.status.savepoint
        message = (f"job {name} runs no stage: driver {view.driver_id} was stopped by a "
                   f"savepoint with cancel{f' (savepoint {saved})' if saved else ''} and "
                   "only waits to end")  # fmt: skip
        return CheckResult("jobs", name, Level.FAIL, message + _stopped_by(busy))
    if not view.healthy:
        message = f"job {name} is live but not healthy yet: state {view.state}"
        return CheckResult("jobs", name, Level.WARN, message)
    message = f"job {name} v{view.version} RUNNING on driver {view.driver_id}"
    return CheckResult("jobs", name, Level.OK, message)


def _check_job_without_master(
    obs: HealthInputs, name: str, busy: ProcedureSeen | None = None
) -> CheckResult:
    """A job judged from the state root while the master is down: its driver may run on."""
    view = obs.views.get(name)
    if view is None or not view.is_live:
        return CheckResult("jobs", name, Level.FAIL,
                           f"job {name}: the master does not answer and no driver holds the "
                           f"job's lease: it is not running{_stopped_by(busy)}")  # fmt: skip
    age = f"{view.last_batch_age:.0f} s ago" if view.last_batch_age is not None else "never"
    return CheckResult("jobs", name, Level.WARN,
                       f"job {name} v{view.version} runs on without the master: driver "
                       f"{view.driver_id} holds its lease, state {view.state}, last batch "
                       f"committed {age}; the master must come back before the driver can be "
                       "relaunched")  # fmt: skip


def check_progress(obs: HealthInputs) -> list[CheckResult]:
    out = []
    for view in obs.live_views:
        out += isolated("progress", view.name, lambda v=view: _job_progress(obs, v),
                        f"job {view.name}: the check of its progress")  # fmt: skip
    return out or [CheckResult("progress", "progress", Level.OK, "no running job to check")]


def _job_progress(obs: HealthInputs, view: JobView) -> list[CheckResult]:
    out = []
    for stage, info in view.stages.items():
        out.append(_check_stage_age(obs, view.name, stage, info))
        rate = _check_rates(obs.thresholds, view.name, stage, info)
        if rate is not None:
            out.append(rate)
    return out


def _check_stage_age(obs: HealthInputs, job: str, stage: str, info: StageStatus) -> CheckResult:
    name, limit = f"{job}/{stage}", obs.thresholds.max_batch_age
    last = info.last_batch_at
    if info.idle_since:
        return CheckResult(
            "progress", name, Level.OK, f"job {job}: stage {stage} is idle (no new data)"
        )
    if not last:
        return CheckResult(
            "progress", name, Level.WARN, f"job {job}: stage {stage} has not committed a batch yet"
        )
    age = obs.now - last
    if age > limit:
        return CheckResult(
            "progress",
            name,
            Level.FAIL,
            f"job {job}: stage {stage} committed no batch for {age:.0f} s (limit {limit:.0f} s)",
        )
    return CheckResult(
        "progress",
        name,
        Level.OK,
        f"job {job}: stage {stage} batch {info.batch_id} {age:.0f} s ago",
    )


def _check_rates(t: Thresholds, job: str, stage: str, info: StageStatus) -> CheckResult | None:
    got, done = info.input_rows_per_second, info.processed_rows_per_second
    if got is None or done is None or got < t.min_input_rate:
        return None
    name = f"{job}/{stage}/rate"
    if done < t.min_rate_ratio * got and info.behind_batches >= t.min_behind_batches:
        return CheckResult(
            "progress",
            name,
            Level.WARN,
            f"job {job}: stage {stage} processes {done:.1f} rows/s but "
            f"receives {got:.1f} rows/s, {info.behind_batches} batches in a row slower than "
            "their rows came (falling behind)",
        )
    return CheckResult(
        "progress",
        name,
        Level.OK,
        f"job {job}: stage {stage} in {got:.1f} rows/s, processed {done:.1f} rows/s",
    )


def check_sinks(obs: HealthInputs) -> list[CheckResult]:
    out = []
    for view in obs.live_views:
        out += isolated("sinks", f"{view.name}/store", lambda v=view: [_check_sink(obs, v)],
                        f"job {view.name}: the check of its store")  # fmt: skip
    return out or [CheckResult("sinks", "sinks", Level.OK, "no running job sink to check")]


def _check_sink(obs: HealthInputs, view: JobView) -> CheckResult:
    name, limit = f"{view.name}/store", obs.thresholds.max_sink_age
    seen = obs.sinks.get(view.name) or SinkSeen(declared=False)
    if not seen.declared:
        return CheckResult("sinks", name, Level.WARN, f"job {view.name}: no recorded spec")
    if seen.error:
        return CheckResult("sinks", name, Level.FAIL, f"sinks check failed: {seen.error}")
    if not seen.store_url:
        return CheckResult("sinks", name, Level.OK, f"job {view.name} declares no store_url")
    busy = not view.status.all_idle()
    if seen.newest_write is None:
        level = Level.WARN if busy else Level.OK
        return CheckResult("sinks", name, level, f"job {view.name}: store has no rows yet")
    age = max(0.0, obs.now - seen.newest_write)
    if age > limit and busy:
        return CheckResult(
            "sinks",
            name,
            Level.FAIL,
            f"job {view.name}: store not written for {age:.0f} s while data "
            f"flows (limit {limit:.0f} s)",
        )
    return CheckResult(
        "sinks", name, Level.OK, f"job {view.name}: store last written {age:.0f} s ago"
    )


CHECKS: dict[str, Callable[[HealthInputs], list[CheckResult]]] = {
    "cluster": check_cluster,
    "jobs": check_jobs,
    "progress": check_progress,
    "sources": check_sources,
    "sinks": check_sinks,
}


def run_checks(
    settings: Settings,
    thresholds: Thresholds | None = None,
    *,
    jobs: Sequence[str] | None = None,
    groups: Iterable[str] = GROUPS,
) -> HealthReport:
    """Gather once, then judge the checks of ``groups`` (:func:`judge`, no I/O). Never raises
    but for an unknown group: an exception while gathering fails every group asked."""
    groups = list(groups)
    for group in groups:
        if group not in CHECKS:
            raise StreamopsError(f"unknown health check group {group!r}; known: {GROUPS}")
    thresholds = thresholds or Thresholds()
    try:
        obs = gather(settings, thresholds, jobs, groups)
    except Exception as exc:  # nothing to judge: every group fails, naming why
        failed = tuple(crashed(g, g, exc, f"gathering what the {g} checks look at")
                       for g in groups)  # fmt: skip
        report = HealthReport(time.time(), failed)
    else:
        report = judge(obs, groups)
    log.info("health %s: %s", report.level.value, report.summary())
    return report


def judge(
    obs: HealthInputs, groups: Iterable[str] = GROUPS,
    checks: dict[str, Callable[[HealthInputs], list[CheckResult]]] = CHECKS,
) -> HealthReport:  # fmt: skip
    """The report of ``groups`` on one observation (pure): a check that raises is that
    group's ``fail``, naming the exception and where, and the other groups still report."""
    results: list[CheckResult] = []
    for group in groups:
        results += isolated(group, group, lambda g=group: checks[g](obs))
    return HealthReport(obs.now, tuple(results))
