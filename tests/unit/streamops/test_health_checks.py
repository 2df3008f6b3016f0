"""The health checks as pure functions: each case is a plain :class:`HealthInputs` value
(what the gathering would have read: the master's JSON, views, workers, source probes,
stores) and the result it must give. No file, server or mock is involved."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from streamops.cluster.status import WorkerStatus
from streamops.health import checks as health
from streamops.health.checks import HealthInputs, Level, Thresholds
from streamops.health.report import ProcedureSeen, SinkSeen, WorkersSeen
from streamops.job_view import JobView
from streamops.settings import Settings
from streamops.state.job_status import JobStatus
from streamops.world.source_probes import SourceProbe

JOB = "fleet-pings"
NOW = 1_800_000_000.0
SETTINGS = Settings.from_env({}, state_root=str(Path("/nonexistent/state")))
MASTER = {"status": "ALIVE", "workers": [
    {"id": "worker-1", "host": "10.0.0.1", "port": 1, "state": "ALIVE", "cores": 2}]}


def view(idle: bool = False, **status: Any) -> JobView:
    stage = {"batch_id": 1, "last_batch_at": NOW - 5, "idle_since": NOW - 60 if idle else None}
    doc = {"state": "RUNNING", "stages": {"vehicles": stage}, **status}
    return JobView(JOB, "1", "RUNNING", True, "driver-1", "RUNNING", None, 5.0, None, None,
                   JobStatus.parse(doc))  # fmt: skip


def observation(**parts: Any) -> HealthInputs:
    views = parts.pop("views", [view()])
    return HealthInputs(SETTINGS, Thresholds(expected_workers=1, backlog_warn_files=3,
                                            backlog_fail_files=10), MASTER,
                       [v.name for v in views], {v.name: v for v in views}, now=NOW,
                       **parts)  # fmt: skip


def probe(**fields: Any) -> dict[str, dict[str, SourceProbe]]:
    return {JOB: {"src": SourceProbe("src", fields.pop("kind", "alpha"),
                                     fields.pop("unit", "files"), **fields)}}


@pytest.mark.parametrize(("sources", "status", "level", "message"), [
    (probe(backlog=2), {}, Level.OK, "job fleet-pings: src backlog 2 files"),
    (probe(backlog=5), {}, Level.WARN, "backlog 5 files (warn above 3)"),
    (probe(backlog=11), {}, Level.FAIL, "backlog 11 files (limit 10)"),
    (probe(kind="beta", unit="records", backlog=6000), {}, Level.WARN,
     "backlog 6000 records (warn above 5000)"),
    (probe(broken="source src was reset or lost records: x"), {}, Level.FAIL,
     "job fleet-pings: source src was reset or lost records: x"),
    (probe(unknown="source src at u does not answer: Timeout"), {}, Level.WARN,
     "does not answer: Timeout"),
    (probe(backlog=0), {"sources_state": {"src": {"state": "degraded", "since": NOW - 500,
                                                 "reason": "timeout"}}},
     Level.FAIL, "degraded since"),
    (probe(backlog=0), {"sources_state": {"src": {"losses": [{"at": NOW - 10, "n": 3}]}}},
     Level.WARN, "has 1 accepted loss(s)"),
])  # fmt: skip
def test_sources(sources: Any, status: dict[str, Any], level: Level, message: str) -> None:
    [result] = health.check_sources(observation(views=[view(**status)], sources=sources))
    assert result.level is level and message in result.message, result


@pytest.mark.parametrize(("sink", "idle", "level", "message"), [
    (None, False, Level.WARN, "no recorded spec"),
    (SinkSeen(True), False, Level.OK, "declares no store_url"),
    (SinkSeen(True, "sqlite:///s.db", error="cannot read the store"), False, Level.FAIL,
     "cannot read the store"),
    (SinkSeen(True, "sqlite:///s.db"), False, Level.WARN, "store has no rows yet"),
    (SinkSeen(True, "sqlite:///s.db"), True, Level.OK, "store has no rows yet"),
    (SinkSeen(True, "sqlite:///s.db", NOW - 900), True, Level.OK, "last written 900 s ago"),
    (SinkSeen(True, "sqlite:///s.db", NOW - 900), False, Level.FAIL, "not written for 900 s"),
])  # fmt: skip
def test_sinks(sink: SinkSeen | None, idle: bool, level: Level, message: str) -> None:
    sinks = {JOB: sink} if sink else {}
    [result] = health.check_sinks(observation(views=[view(idle)], sinks=sinks))
    assert result.level is level and message in result.message, result


def worker_status(name: str, state: str, wid: str | None = "w") -> WorkerStatus:
    return WorkerStatus(name, wid, state, 2, 0, 1024, 0, None, None)


@pytest.mark.parametrize(("workers", "level", "message"), [
    (WorkersSeen(1, (worker_status("worker-1", "ALIVE"),)), Level.OK, "1 workers ALIVE"),
    (WorkersSeen(1, (worker_status("worker-2", "UNKNOWN", None),)), Level.FAIL,
     "worker worker-2 is not registered with the master"),
    (WorkersSeen(2), Level.FAIL, "1 of 2 expected workers ALIVE"),
])  # fmt: skip
def test_workers(workers: WorkersSeen, level: Level, message: str) -> None:
    [master, result] = health.check_cluster(observation(workers=workers))
    assert master.level is Level.OK
    assert result.level is level and message in result.message, result


def test_a_job_gone_quiet_fails_its_progress() -> None:
    quiet = view()
    quiet.stages["vehicles"].last_batch_at = NOW - 600
    [result, *_] = health.check_progress(observation(views=[quiet]))
    assert result.level is Level.FAIL and "no batch for 600 s" in result.message


def procedure(job: str | None = JOB, **fields: Any) -> ProcedureSeen:
    base: dict[str, Any] = dict(
        kind="upgrade" if job else "scale", job=job,
        what="upgrade v1 → v2 (savepoint sp-1)" if job else "scale to 3 worker(s)",
        owner="cli", phase="savepoint-requested", next_step="savepoint_answered",
        since=NOW - 120, at=NOW - 60, resume="`streamops upgrade fleet-pings v2.yaml`",
        stopped=bool(job))  # fmt: skip
    return ProcedureSeen(**{**base, **fields})


def test_a_procedure_in_progress_fails_and_names_what_resumes_it() -> None:
    gone = JobView(JOB, "1", "FINISHED", False, None, "FINISHED", None, None, None, None,
                   JobStatus())  # fmt: skip
    job, proc = health.check_jobs(observation(views=[gone], procedures=[procedure()]))
    assert job.level is Level.FAIL and job.message == (
        "job fleet-pings is not running: state FINISHED (driver ended FINISHED); stopped by "
        "the upgrade v1 → v2 (savepoint sp-1) of fleet-pings, which has not finished")
    assert proc.level is Level.FAIL and proc.name == "procedure/upgrade/fleet-pings"
    assert proc.message.startswith("upgrade v1 → v2 (savepoint sp-1) of fleet-pings has not "
                                   "finished: owner cli, phase savepoint-requested")
    assert "next step savepoint_answered" in proc.message and "120 s ago" in proc.message
    assert proc.message.endswith("the job is stopped; resume: `streamops upgrade fleet-pings "
                                 "v2.yaml`")  # fmt: skip
    # running on, with an upgrade planned but not begun: the job is fine, the upgrade is not
    job, proc = health.check_jobs(observation(procedures=[procedure(stopped=False)]))
    assert job.level is not Level.FAIL and "stopped by" not in job.message
    assert proc.level is Level.FAIL


def test_a_cluster_procedure_fails_the_cluster_group_even_without_the_master() -> None:
    scale = procedure(None, phase="begun", next_step="change_workers",
                      resume="`streamops scale --workers 3`", failure="ClusterError: no room")
    _, _, result = health.check_cluster(observation(procedures=[scale],
                                                    workers=WorkersSeen(0)))  # fmt: skip
    assert result.group == "cluster" and result.level is Level.FAIL
    assert "it failed: ClusterError: no room; resume: `streamops scale --workers 3`" in (
        result.message)
    down = observation(procedures=[scale])
    down.master = None
    assert [r.name for r in health.check_cluster(down)] == ["master", "procedure/scale"]


def test_a_stopped_driver_fails_and_no_declared_job_says_why_the_others_are_not() -> None:
    stopped = view(state="STOPPED", driver_id="driver-1", savepoint="sp-1")
    [job] = health.check_jobs(observation(views=[stopped]))
    assert job.level is Level.FAIL and "runs no stage" in job.message and "sp-1" in job.message
    [none] = health.check_jobs(observation(views=[], dormant={JOB: "cancelled at 12:00"}))
    assert none.level is Level.OK and none.message == "no declared job (fleet-pings cancelled "\
        "at 12:00)"
