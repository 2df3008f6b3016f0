"""Task groups of the ``restart_job`` DAG: one task per procedure step.

Every group takes ``ctx``, the output of a task with ``multiple_outputs=True`` holding at
least ``job`` and ``savepoint``. Each step calls one procedure of the ops library and records
its intent in ``jobs/<job>/restart.json`` before anything destructive, so a retried task
resumes instead of repeating harm:

    savepoint_with_cancel:  request (intent + control request) → wait_result (sensor)
    start_same_version:     start the job's last spec from the savepoint (no second driver)
    verify:                 wait_healthy (deferrable sensor) → on failure fail with why → done

The upgrade (``savepoint_and_upgrade``) runs the steps of :mod:`streamops.upgrade_steps`
instead: :mod:`streamops_airflow.upgrade_groups`.
"""

from __future__ import annotations

import logging
from typing import Any

from airflow.sdk import TaskGroup, XComArg, get_current_context, task
from airflow.sdk.exceptions import AirflowSkipException

from streamops.intents import record_intent
from streamops.jobs import JobRegistry
from streamops.restart import restart_from_savepoint
from streamops_airflow.exceptions import ProcedureFailed
from streamops_airflow.hooks import ops_settings
from streamops_airflow.operators import RequestSavepointOperator, run_owner
from streamops_airflow.sensors import JobHealthySensor, SavepointResultSensor

log = logging.getLogger("streamops.airflow")

HEALTH_TIMEOUT = 300.0
SAVEPOINT_TIMEOUT = 240.0


def savepoint_with_cancel(ctx: XComArg, *, procedure: str) -> TaskGroup:
    """Savepoint the running job and stop it once the copy is verified."""
    with TaskGroup("savepoint_with_cancel", tooltip="savepoint, then stop the job") as group:
        request = RequestSavepointOperator(
            task_id="request", job=ctx["job"], savepoint=ctx["savepoint"], cancel=True,
            procedure=procedure, request_timeout=SAVEPOINT_TIMEOUT - 60,
        )  # fmt: skip
        SavepointResultSensor(
            task_id="wait_result", job=ctx["job"], request_id=request.output, cancel=True,
            timeout=SAVEPOINT_TIMEOUT, retries=0, poke_interval=1.0,
        )  # fmt: skip
    return group


@task(retries=1)
def start_same_version(ctx: dict[str, Any]) -> str:
    """Restart: start the job's last spec from the savepoint; the driver id."""
    settings = ops_settings()
    return restart_from_savepoint(settings, ctx["job"], ctx["savepoint"], wait_healthy=None,
                                  owner=run_owner(get_current_context()))  # fmt: skip


def verify(ctx: XComArg, started: XComArg, *, procedure: str) -> TaskGroup:
    """Wait until the started driver is healthy; on failure fail with why."""
    with TaskGroup("verify", tooltip="wait healthy, report a failure") as group:
        wait = JobHealthySensor(
            task_id="wait_healthy", job=ctx["job"], since_driver=started, deferrable=True,
            timeout=HEALTH_TIMEOUT, poke_interval=2, retries=0,
        )  # fmt: skip
        back = rollback.override(task_id="rollback")(ctx, started.operator.task_id, procedure)
        finish = done.override(task_id="done")(ctx, wait.output, procedure)
        [started, wait] >> back
        wait >> finish
    return group


@task(trigger_rule="one_failed", retries=0)
def rollback(ctx: dict[str, Any], start_task_id: str, procedure: str) -> None:
    """The started version is not healthy: fail the run with the reason (the savepoint is
    kept to start from again)."""
    if not ctx:
        raise AirflowSkipException("nothing to report: the run failed before it began")
    settings = ops_settings()
    job, savepoint = ctx["job"], ctx["savepoint"]
    driver = get_current_context()["ti"].xcom_pull(task_ids=start_task_id)
    registry = JobRegistry(settings)
    view = registry.view(job)
    reason = (f"driver {driver or '(none started)'} is {view.state}; "
              f"{registry.failure_detail(view, driver)}")  # fmt: skip
    raise ProcedureFailed(
        f"job {job} did not become healthy after the {procedure} ({reason}); savepoint "
        f"{savepoint} is kept: run restart_job again, or `streamops restore`"
    )


@task(retries=2)
def done(ctx: dict[str, Any], driver: str | None, procedure: str) -> dict[str, Any]:
    """Record the end of the procedure; return the job's state for the run's XCom."""
    settings = ops_settings()
    view = JobRegistry(settings).view(ctx["job"])
    record_intent(settings, ctx["job"], procedure, "done", savepoint=ctx.get("savepoint"),
                  driver_id=driver, version=view.version)  # fmt: skip
    log.info("job %s v%s is healthy on driver %s", view.name, view.version, view.driver_id)
    return {"job": view.name, "version": view.version, "driver_id": view.driver_id}
