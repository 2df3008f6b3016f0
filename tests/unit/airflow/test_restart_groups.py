"""The restart DAG's tasks are thin: each runs (or polls) one step of
:mod:`streamops.procedures.savepoint_restart`, for the DAG run that owns the job's restart intent.
Run on the fake cluster of :mod:`support.restart_fake` (the registry, the driver on the real control
channel, the submission), a run whose tasks are each retried after they ran repeats no
savepoint with cancel and no submission."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from support.dag_runs import dag_tasks
from support.restart_fake import JOB, FakeCluster, as_dag_task, install, settings_at

from streamops.procedures import savepoint_restart, upgrade_steps
from streamops_airflow import job_groups as groups
from streamops_airflow.procedure_tasks import StepSensor

RUN = SimpleNamespace(dag_id="restart_job", run_id="manual__1")
OWNER = "airflow:restart_job/manual__1"
CTX = {"job": JOB, "mode": "savepoint", "savepoint": "sp-dag"}


@pytest.fixture
def cluster(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> FakeCluster:
    return as_dag_task(monkeypatch, install(settings_at(tmp_path)), RUN)


def sensor(step: str) -> StepSensor:
    return StepSensor(task_id=f"wait_{step}", step=getattr(savepoint_restart, step), job=JOB)


def test_every_restart_task_runs_a_library_step(
    cluster: FakeCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    called: list[tuple[str, str, str]] = []
    intent = SimpleNamespace(job=JOB, savepoint="sp-dag", version="1", new_driver="d",
                             savepoint_cancel=lambda: SimpleNamespace(request="r"))  # fmt: skip
    for name in ("begin", "request_savepoint", "savepoint_answered", "job_stopped",
                 "start_from_savepoint", "verify"):  # fmt: skip
        def step(settings: Any, job: str, owner: str, *_: Any, _name: str = name,
                 **__: Any) -> Any:  # fmt: skip
            called.append((_name, job, owner))
            return True if _name in ("savepoint_answered", "job_stopped") else intent

        monkeypatch.setattr(savepoint_restart, name, step)
    assert groups.begin.function(CTX) == "sp-dag"
    assert groups.request.function(CTX) == "r"
    assert sensor("savepoint_answered").poke({}) is True  # type: ignore[arg-type]
    assert sensor("job_stopped").poke({}) is True  # type: ignore[arg-type]
    assert groups.start_same_version.function(CTX) == "d"
    assert groups.done.function(CTX) == {"job": JOB, "version": "1", "driver_id": "d"}
    assert called == [(name, JOB, OWNER) for name in (
        "begin", "request_savepoint", "savepoint_answered", "job_stopped",
        "start_from_savepoint", "verify")]  # fmt: skip


def test_the_restart_dag_is_made_of_these_tasks() -> None:
    tasks = dag_tasks("restart_job")
    for task_id, fn in (("savepoint_with_cancel.begin", groups.begin),
                        ("savepoint_with_cancel.request", groups.request),
                        ("start_same_version", groups.start_same_version),
                        ("verify.done", groups.done), ("verify.rollback", groups.rollback)):
        assert tasks[task_id].python_callable is fn.function, task_id
    for task_id, step in (("savepoint_with_cancel.wait_result", "savepoint_answered"),
                          ("savepoint_with_cancel.wait_stopped", "job_stopped")):
        wait = tasks[task_id]
        assert isinstance(wait, StepSensor), task_id
        assert wait.step is getattr(savepoint_restart, step), task_id
    savepoints = [t for t in tasks.values() if "savepoint" in type(t).__name__.lower()]
    assert savepoints == []  # no operator or sensor of its own: the library's steps


def test_the_cluster_restart_dag_runs_the_library_steps() -> None:
    tasks = dag_tasks("cluster_restart")
    assert "savepoint_all_jobs.savepoint_with_cancel" in tasks
    wait = dag_tasks("savepoint_and_upgrade")[
        "savepoint_with_cancel.wait_result"]
    assert isinstance(wait, StepSensor) and wait.step is upgrade_steps.savepoint_answered


@pytest.mark.parametrize("retried", ["begin", "request", "wait_result", "wait_stopped",
                                     "start_same_version", "done"])
def test_a_task_retried_after_it_ran_repeats_no_destructive_step(
    cluster: FakeCluster, retried: str
) -> None:
    tasks = {
        "begin": lambda: groups.begin.function(CTX),
        "request": lambda: groups.request.function(CTX),
        "wait_result": lambda: _poke_until_done("savepoint_answered"),
        "wait_stopped": lambda: _poke_until_done("job_stopped"),
        "start_same_version": lambda: groups.start_same_version.function(CTX),
        "done": lambda: groups.done.function(CTX),
    }
    for name, run in tasks.items():
        run()
        if name == retried:
            run()  # the task's retry
    assert cluster.count("savepoint sp-dag cancel=True") == 1 and cluster.submitted == 1
    assert len(list(cluster.settings.layout.control_dir(JOB).glob("*[!t].json"))) == 1
    intent = savepoint_restart.load_intent(cluster.settings, JOB)
    assert intent is not None and intent.phase == "done" and intent.owner == OWNER


def _poke_until_done(step: str) -> None:
    for _ in range(5):
        if sensor(step).poke({}):  # type: ignore[arg-type]
            return
    raise AssertionError(f"{step} never done")


def test_a_run_whose_savepoint_fails_closes_its_intent_as_failed(cluster: FakeCluster) -> None:
    """The savepoint failed (a full disk) and the driver ran on: the run's intent is closed as
    failed, by the policy the CLI applies, not left at savepoint-requested (health said the
    job was stopped, `up` would not submit it, and the next run resumed a dead savepoint)."""
    from streamops.health.procedures import gather_procedures, procedure_result
    from streamops_airflow.exceptions import ProcedureFailed

    cluster.savepoint_error = "savepoint sp-dag failed: [Errno 28] No space left on device"
    groups.begin.function(CTX)
    groups.request.function(CTX)
    wait = dag_tasks("restart_job")["savepoint_with_cancel.wait_result"]
    wait.job = JOB  # rendered from the run's context by Airflow
    with pytest.raises(ProcedureFailed) as failed:
        for _ in range(5):
            wait.poke({})
    assert "No space left on device" in str(failed.value)
    assert "nothing was changed: the job still runs (driver driver-1)" in str(failed.value)
    assert cluster.driver == "driver-1" and cluster.submitted == 0
    intent = savepoint_restart.load_intent(cluster.settings, JOB)
    assert intent is not None and intent.owner == OWNER
    assert (intent.phase, intent.failed_step) == ("failed", "savepoint_answered")
    assert "No space left on device" in str(intent.failure)
    (seen,) = gather_procedures(cluster.settings, [JOB], 1)
    result = procedure_result(seen, seen.at + 60)
    assert result.level == "warn" and "still runs" in result.message
    with pytest.raises(ProcedureFailed) as said:  # the run's last word: what failed, not health
        groups.rollback.function(CTX, "start_same_version")
    assert "having changed nothing: the job still runs" in str(said.value)
