"""Health sees every job that should run, and every procedure that has not finished.

Each case is a hand-made state root (submissions, status, intent records as the procedures
write them) and a master that answers a hand-made document, or not at all: an upgrade whose
DAG run's Airflow died after the savepoint request, a CLI restart, a cluster restart, a scale
interrupted; the jobs listing and ``streamops up`` without the master or during a procedure;
the worker count health expects after a scale."""

from __future__ import annotations

import argparse
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest
from support.nodes_fake import FakeWorkers

from streamops.cli import main, scale_cmds
from streamops.cluster.client import MasterClient
from streamops.exceptions import ClusterError, ClusterNotRunning
from streamops.health import checks as health
from streamops.health import gather as health_gather
from streamops.health.checks import Level, Thresholds
from streamops.procedures import cluster_restart, savepoint_restart, scale, upgrade_steps
from streamops.procedures.savepoint_taking import SavepointCancel
from streamops.settings import PROJECT_ROOT, Settings
from streamops.spec import load_spec
from streamops.stack import local_stack
from streamops.state.layout import append_jsonl, write_json_atomic
from streamops_contract.state import lease

JOB = "fleet-pings"
V1 = PROJECT_ROOT / "config" / "jobs" / "fleet-pings.yaml"
V2 = PROJECT_ROOT / "config" / "jobs" / "fleet-pings-v2.yaml"
DAG_OWNER = "airflow:savepoint_and_upgrade/manual__2026-11-27T00:10:00+00:00"
MASTER = {"status": "ALIVE", "workers": [], "activedrivers": [], "completeddrivers": [],
          "activeapps": []}  # fmt: skip


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings.from_env({}, state_root=str(tmp_path / "state"))


def master_answers(monkeypatch: pytest.MonkeyPatch, doc: dict[str, Any] | None) -> None:
    def state(self: MasterClient) -> dict[str, Any]:
        if doc is None:
            raise ClusterNotRunning("the Spark master web UI at http://x does not answer")
        return doc

    monkeypatch.setattr(MasterClient, "state", state)


def submitted(settings: Settings, at: float, driver: str = "driver-1") -> None:
    spec = load_spec(V1).model_dump(mode="json")
    append_jsonl(settings.layout.submissions_file(JOB),
                 {"event": "submitted", "at": at, "driver_id": driver, "version": "1",
                  "spec": spec})  # fmt: skip


def stopped_by_savepoint(settings: Settings, at: float, request: str = "req-1") -> None:
    write_json_atomic(settings.layout.status_file(JOB), {
        "state": "STOPPED", "driver_id": "driver-1", "version": "1", "stopped_by": request,
        "stopped_at": at, "savepoint": "fleet-pings-v1-v2", "stages": {}})  # fmt: skip


def upgrade_intent(settings: Settings, owner: str, at: float, stopped: bool = True) -> None:
    """An upgrade as the DAG leaves it when Airflow dies right after the savepoint request
    (``stopped``), or right after its plan."""
    intent = upgrade_steps.UpgradeIntent(
        job=JOB, owner=owner, new_spec=load_spec(V2).model_dump(mode="json"),
        old_spec=load_spec(V1).model_dump(mode="json"), from_version="1", to_version="2",
        savepoint="fleet-pings-v1-v2", plan="…", restore_stages=["vehicles"], fresh_stages=[],
        standby_mode="cold", old_driver="driver-1", request="req-1",
        phase="savepoint-requested", done=["plan", "start_standby", "request_savepoint"],
        at=at, times={"plan": at - 5, "start_standby": at - 4, "request_savepoint": at},
    )  # fmt: skip
    if not stopped:
        intent.phase, intent.done, intent.request = "planned", ["plan"], None
    write_json_atomic(settings.layout.intent_record(JOB, "upgrade"), asdict(intent))


def by_name(report: health.HealthReport) -> dict[str, health.CheckResult]:
    return {r.name: r for r in report.results}


# --- procedures in progress -------------------------------------------------------------
def test_an_upgrade_whose_dag_died_after_the_savepoint_fails_health(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The reported defect: the job stopped by the upgrade's savepoint with cancel, Airflow
    gone; health said OK, "no declared job"."""
    now = time.time()
    submitted(settings, now - 600)
    stopped_by_savepoint(settings, now - 60)
    upgrade_intent(settings, DAG_OWNER, now - 60)
    master_answers(monkeypatch, MASTER)
    report = health.run_checks(settings, Thresholds(), groups=["jobs"])
    results = by_name(report)
    assert not report.ok
    assert "no declared job" not in report.summary()
    job = results[JOB]
    assert job.level is Level.FAIL and "not running" in job.message
    assert "stopped by the upgrade v1 → v2" in job.message
    proc = results[f"procedure/upgrade/{JOB}"]
    assert proc.level is Level.FAIL
    for part in ("upgrade v1 → v2", f"owner {DAG_OWNER}", "phase savepoint-requested",
                 "next step savepoint_answered", "the job is stopped",
                 "Airflow DAG savepoint_and_upgrade, run manual__2026-11-27T00:10:00+00:00",
                 "clear its unfinished tasks"):  # fmt: skip
        assert part in proc.message, proc.message


def test_an_upgrade_of_the_cli_names_the_command_that_resumes_it(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    now = time.time()
    submitted(settings, now - 600)
    stopped_by_savepoint(settings, now - 60)
    upgrade_intent(settings, "cli", now - 60)
    master_answers(monkeypatch, None)  # the master down too: the same verdict from the state root
    report = health.run_checks(settings, Thresholds(), groups=["jobs"])
    proc = by_name(report)[f"procedure/upgrade/{JOB}"]
    assert proc.level is Level.FAIL
    assert f"resume: `streamops upgrade {JOB} " in proc.message
    assert "fleet-pings-v2.yaml`" in proc.message, proc.message
    assert by_name(report)[JOB].level is Level.FAIL


def test_a_restart_interrupted_after_its_savepoint_fails_health(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    now = time.time()
    submitted(settings, now - 600)
    stopped_by_savepoint(settings, now - 30)
    intent = savepoint_restart.SavepointRestart(
        job=JOB, owner="cli", purpose="restart", spec=load_spec(V1).model_dump(mode="json"),
        version="1", savepoint="fleet-pings-restart-1",
        cancel=SavepointCancel(JOB, "fleet-pings-restart-1", cancel=True).to_dict(),
        phase="savepoint-answered", done=["begin", "request_savepoint", "savepoint_answered"],
        at=now - 30, times={"begin": now - 40},
    )  # fmt: skip
    write_json_atomic(settings.layout.intent_record(JOB, "restart"), asdict(intent))
    master_answers(monkeypatch, MASTER)
    results = by_name(health.run_checks(settings, Thresholds(), groups=["jobs"]))
    proc = results[f"procedure/restart/{JOB}"]
    assert proc.level is Level.FAIL and "next step job_stopped" in proc.message
    assert f"resume: `streamops restart {JOB} --savepoint fleet-pings-restart-1`" in proc.message
    assert results[JOB].level is Level.FAIL


def test_a_cluster_restart_interrupted_with_the_cluster_down_fails_health(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    intent = cluster_restart.RestartIntent(
        release_from="r1", release_to="r2", workers=["worker-1", "worker-2"],
        savepoints={JOB: "fleet-pings-restart-x"}, phase="stopped", saved=[JOB],
        owner="airflow:cluster_restart/manual__1",
    )  # fmt: skip
    write_json_atomic(settings.layout.intent_file("cluster-restart"), asdict(intent))
    master_answers(monkeypatch, None)
    results = by_name(health.run_checks(settings, Thresholds(), groups=["cluster"]))
    proc = results["procedure/cluster-restart"]
    assert proc.level is Level.FAIL
    assert "cluster restart r1 → r2" in proc.message and "phase stopped" in proc.message
    assert "Airflow DAG cluster_restart, run manual__1" in proc.message
    intent.owner = "cli"
    write_json_atomic(settings.layout.intent_file("cluster-restart"), asdict(intent))
    results = by_name(health.run_checks(settings, Thresholds(), groups=["cluster"]))
    assert "resume: `streamops cluster restart --release r2`" in (
        results["procedure/cluster-restart"].message)


@pytest.mark.parametrize("cluster_phase", ["restoring", "rolled-back"])
def test_a_job_restart_of_the_cluster_restart_follows_the_cluster_restart(
    settings: Settings, monkeypatch: pytest.MonkeyPatch, cluster_phase: str
) -> None:
    """The cluster restart's own restart of a job is unfinished while the cluster restart is;
    once that one rolled back (the jobs started again from the same savepoints), it is over."""
    now = time.time()
    submitted(settings, now - 600)
    intent = savepoint_restart.SavepointRestart(
        job=JOB, owner="cluster-restart", purpose="cluster-restart",
        spec=load_spec(V1).model_dump(mode="json"), version="1", savepoint="sp-x",
        cancel=SavepointCancel(JOB, "sp-x", cancel=True).to_dict(), phase="started",
        done=["begin", "request_savepoint", "savepoint_answered", "job_stopped",
              "start_from_savepoint"], at=now - 30,
    )  # fmt: skip
    write_json_atomic(settings.layout.intent_record(JOB, "restart"), asdict(intent))
    cluster = cluster_restart.RestartIntent(
        release_from="r1", release_to="r2", workers=["worker-1"], savepoints={JOB: "sp-x"},
        phase=cluster_phase, saved=[JOB])  # fmt: skip
    write_json_atomic(settings.layout.intent_file("cluster-restart"), asdict(cluster))
    master_answers(monkeypatch, MASTER)
    results = by_name(health.run_checks(settings, Thresholds(), groups=["jobs"]))
    if cluster_phase == "rolled-back":
        assert f"procedure/restart/{JOB}" not in results
    else:
        assert "the cluster restart" in results[f"procedure/restart/{JOB}"].message


def test_a_restart_from_the_last_checkpoint_is_over_once_resubmitted(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cancel recorded and nothing submitted since: in progress. A submission after the
    ``resubmit`` record (the DAG's last one): over, the job's check judges the driver."""
    now = time.time()
    submitted(settings, now - 600)
    write_json_atomic(settings.layout.intent_record(JOB, "restart"), {
        "phase": "cancel", "at": now - 20, "mode": "last-checkpoint", "driver_id": "driver-1"})
    append_jsonl(settings.layout.submissions_file(JOB),
                 {"event": "cancelled", "at": now - 19, "driver_id": "driver-1"})  # fmt: skip
    master_answers(monkeypatch, MASTER)
    results = by_name(health.run_checks(settings, Thresholds(), groups=["jobs"]))
    proc = results[f"procedure/restart/{JOB}"]
    assert f"resume: `streamops restart {JOB} --mode last-checkpoint`" in proc.message
    assert results[JOB].level is Level.FAIL  # cancelled by the restart: still expected to run
    write_json_atomic(settings.layout.intent_record(JOB, "restart"), {
        "phase": "resubmit", "at": now - 10, "mode": "last-checkpoint",
        "owner": "airflow:restart_job/manual__1", "version": "1"})  # fmt: skip
    submitted(settings, now - 9, driver="driver-2")
    results = by_name(health.run_checks(settings, Thresholds(), groups=["jobs"]))
    assert f"procedure/restart/{JOB}" not in results and JOB in results


def scale_args(workers: int) -> argparse.Namespace:
    return argparse.Namespace(workers=workers, add=None, remove=None, no_verify=False)


def quiet_scale(monkeypatch: pytest.MonkeyPatch, fail: bool = False) -> None:
    """The scale's actions at the edge: the real port's nodes are fake agents whose workers
    change (or fail to), nothing else runs."""
    nodes = FakeWorkers(failure="the master lists 2 ALIVE workers, not 3, after 180s"
                        if fail else None)  # fmt: skip
    monkeypatch.setattr("streamops.world.port.AgentNodes", lambda settings: nodes)
    monkeypatch.setattr(scale, "batch_marks", lambda s: {})
    monkeypatch.setattr(scale, "batches_continue", lambda s, m, t=None: {})
    monkeypatch.setattr(scale, "rebalance_candidates", lambda s: [])


def test_an_interrupted_scale_fails_health_with_its_command(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    quiet_scale(monkeypatch, fail=True)
    with pytest.raises(ClusterError):
        scale_cmds.run_scale(scale_args(3), settings)
    master_answers(monkeypatch, MASTER)
    results = by_name(health.run_checks(settings, Thresholds(expected_workers=0),
                                        groups=["cluster"]))  # fmt: skip
    proc = results["procedure/scale"]
    assert proc.level is Level.FAIL and "scale to 3 worker(s)" in proc.message
    assert "next step change_workers" in proc.message and "it failed: ClusterError" in proc.message
    assert "resume: `streamops scale --workers 3`" in proc.message
    quiet_scale(monkeypatch)
    scale_cmds.run_scale(scale_args(3), settings)  # the command given resumes and finishes it
    results = by_name(health.run_checks(settings, Thresholds(expected_workers=0),
                                        groups=["cluster"]))  # fmt: skip
    assert "procedure/scale" not in results


@pytest.mark.parametrize("workers", [3, 1])
def test_health_expects_the_workers_of_the_last_scale(
    settings: Settings, monkeypatch: pytest.MonkeyPatch, workers: int
) -> None:
    master_answers(monkeypatch, MASTER)
    [_, before] = health.run_checks(settings, groups=["cluster"]).results
    assert "0 of 2 expected workers ALIVE" in before.message  # the profile's count
    quiet_scale(monkeypatch)
    scale_cmds.run_scale(scale_args(workers), settings)
    [_, after] = health.run_checks(settings, groups=["cluster"]).results
    assert f"0 of {workers} expected workers ALIVE" in after.message
    assert health_gather.expected_workers(settings, Thresholds()) == workers
    assert health_gather.expected_workers(settings, Thresholds(expected_workers=5)) == 5


# --- the jobs that should run ----------------------------------------------------------
def test_a_submitted_job_without_a_driver_fails_and_none_declared_says_why(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    now = time.time()
    submitted(settings, now - 600)  # submitted, never cancelled: its driver is gone
    master_answers(monkeypatch, MASTER)
    [job] = health.run_checks(settings, groups=["jobs"]).results
    assert job.level is Level.FAIL and "job fleet-pings is not running" in job.message
    append_jsonl(settings.layout.submissions_file(JOB), {"event": "cancelled", "at": now})
    [none] = health.run_checks(settings, groups=["jobs"]).results
    assert none.level is Level.OK
    assert none.message.startswith("no declared job (fleet-pings cancelled at ")


# --- `streamops jobs` without the master -------------------------------------------------
def test_jobs_lists_the_state_root_when_the_master_does_not_answer(
    settings: Settings, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    now = time.time()
    submitted(settings, now - 600)
    write_json_atomic(settings.layout.status_file(JOB), {
        "state": "RUNNING", "driver_id": "driver-1", "version": "1",
        "stages": {"vehicles": {"batch_id": 3, "last_batch_at": now - 2}}})  # fmt: skip
    lease.acquire(settings.layout, JOB, "driver-1")
    append_jsonl(settings.layout.submissions_file("old-job"), {"event": "submitted", "at": 1.0})
    master_answers(monkeypatch, None)
    monkeypatch.setenv("COLUMNS", "200")
    assert main(["--state-root", str(settings.state_root), "jobs"]) == 0
    out = capsys.readouterr().out
    assert "driver-1" in out and "RUNNING" in out
    assert "NOT RUNNING (no lease)" in out
    assert "the Spark master did not answer" in out


# --- `streamops up` ---------------------------------------------------------------------
def test_up_submits_a_job_an_unfinished_upgrade_has_not_stopped_yet(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    now = time.time()
    submitted(settings, now - 600)
    append_jsonl(settings.layout.submissions_file(JOB), {"event": "cancelled", "at": now - 9})
    upgrade_intent(settings, "cli", now - 60, stopped=False)  # planned, then `down`
    master_answers(monkeypatch, MASTER)
    submits = quiet_up(monkeypatch)
    lines = local_stack.job_lines(
        local_stack.up(settings, local_stack.StackOptions(spec=V1, airflow=False)))
    assert submits == [JOB]
    assert any("upgrade v1 → v2" in line and "streamops upgrade fleet-pings" in line
               for _, line in lines)  # fmt: skip


def quiet_up(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """``up`` without processes: the jobs it submits."""
    submits: list[str] = []
    monkeypatch.setattr(local_stack.LocalCluster, "start", lambda self: None)
    monkeypatch.setattr(local_stack, "start_service", lambda *a, **k: None)
    monkeypatch.setattr(local_stack, "_wait_beta", lambda port: None)
    monkeypatch.setattr("streamops.world.submit.submit_job",
                        lambda spec, s, **k: submits.append(spec.name) or "driver-2")
    return submits


def test_up_does_not_submit_a_job_an_unfinished_upgrade_stopped_and_says_so(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    now = time.time()
    submitted(settings, now - 600)
    stopped_by_savepoint(settings, now - 60)
    upgrade_intent(settings, DAG_OWNER, now - 60)
    master_answers(monkeypatch, MASTER)
    submits = quiet_up(monkeypatch)
    obs = local_stack.up(settings, local_stack.StackOptions(spec=V1, airflow=False))
    assert submits == []
    lines = local_stack.job_lines(obs)
    assert not any(running for running, _ in lines)
    text = "\n".join(line for _, line in lines)
    assert "job fleet-pings is not running" in text and "is running" not in text.replace(
        "is not running", "")
    assert "the upgrade v1 → v2 (savepoint fleet-pings-v1-v2) of fleet-pings has not " \
        "finished" in text
    assert "Airflow DAG savepoint_and_upgrade" in text


def test_a_running_job_is_checked_even_after_a_standby_of_it_was_killed(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A killed hot standby leaves a ``cancelled`` event last; the job's driver runs on, so
    the job is judged, not left out as cancelled."""
    now = time.time()
    submitted(settings, now - 600)
    append_jsonl(settings.layout.submissions_file(JOB), {
        "event": "submitted", "at": now - 590, "driver_id": "driver-2", "hot_standby": True})
    append_jsonl(settings.layout.submissions_file(JOB),
                 {"event": "cancelled", "at": now - 10, "driver_id": "driver-2"})  # fmt: skip
    write_json_atomic(settings.layout.status_file(JOB), {
        "state": "RUNNING", "driver_id": "driver-1", "version": "1",
        "stages": {"vehicles": {"batch_id": 3, "last_batch_at": now - 2, "ready": True}}})
    master_answers(monkeypatch, {**MASTER, "activedrivers": [
        {"id": "driver-1", "state": "RUNNING", "worker": "w-1"}]})  # fmt: skip
    [job] = health.run_checks(settings, groups=["jobs"]).results
    assert job.name == JOB and job.level is Level.OK, job
