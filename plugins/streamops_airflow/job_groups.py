"""Task groups of the ``restart_job`` DAG (mode ``savepoint``): each task runs, or polls, one
step of :mod:`streamops.procedures.savepoint_restart` (the restart from a fresh savepoint that the
CLI, the rebalance and the cluster restart run), for the DAG run that owns the job's restart
intent ``jobs/<job>/restart.json``; a retried task resumes from it (no second cancel, no
second submit). Every group takes ``ctx``, the output of a task with
``multiple_outputs=True`` holding at least ``job`` and ``savepoint``::

    savepoint_with_cancel:  begin → request → wait_result (sensor) → wait_stopped (sensor)
    start_same_version:     the job's spec submitted from the savepoint (once)
    verify:                 wait_healthy (deferrable sensor) → done (the library's verify),
                            or rollback: fail with why (the savepoint is kept)

The upgrade (``savepoint_and_upgrade``) runs the steps of :mod:`streamops.procedures.upgrade_steps`
instead: :mod:`streamops_airflow.upgrade_groups`.
"""

from __future__ import annotations

import logging
from typing import Any

from airflow.sdk import TaskGroup, XComArg, get_current_context, task
from airflow.sdk.exceptions import AirflowSkipException

from streamops_airflow.exceptions import ProcedureFailed
from streamops_airflow.sensors import JobHealthySensor
from streamops_airflow.step_tasks import StepSensor, call_step

log = logging.getLogger("streamops.airflow")

HEALTH_TIMEOUT = 300.0
SAVEPOINT_TIMEOUT = 240.0
STOP_TIMEOUT = 90.0


def restart_step(step: str, job: str, *args: Any, fatal: bool = True, **kwargs: Any) -> Any:
    """Run step ``step`` of :mod:`streamops.procedures.savepoint_restart` on ``job`` for this DAG
    run; with ``fatal`` a job error (not running, a failed or unanswered savepoint, another run's
    restart) fails the task without a retry."""
    from streamops.exceptions import JobError
    from streamops.procedures import savepoint_restart
    from streamops_airflow.operators import run_owner

    owner = run_owner(get_current_context())
    return call_step(savepoint_restart, step, owner, job, *args,
                     fatal=(JobError,) if fatal else (), **kwargs)  # fmt: skip


class RestartStepSensor(StepSensor):
    """Poll step ``step`` of :mod:`streamops.procedures.savepoint_restart` on ``job`` until it is
    done."""

    def run_step(self) -> Any:
        return restart_step(self.step, self.job)


@task(retries=1)
def begin(ctx: dict[str, Any]) -> str:
    """Record the restart's intent (the job's spec, the savepoint name); the savepoint."""
    return str(restart_step("begin", ctx["job"], savepoint=ctx["savepoint"]).savepoint)


@task(retries=1)
def request(ctx: dict[str, Any]) -> str:
    """Ask the driver for the savepoint with cancel; the request id."""
    intent = restart_step("request_savepoint", ctx["job"], timeout=SAVEPOINT_TIMEOUT - 60)
    return str(intent.savepoint_cancel().request)


def savepoint_with_cancel(ctx: XComArg) -> TaskGroup:
    """Savepoint the running job and stop it once the copy is verified."""
    with TaskGroup("savepoint_with_cancel", tooltip="savepoint, then stop the job") as group:
        begun = begin.override(task_id="begin")(ctx)
        asked = request.override(task_id="request")(ctx)
        answered = RestartStepSensor(
            task_id="wait_result", step="savepoint_answered", job=ctx["job"],
            timeout=SAVEPOINT_TIMEOUT, retries=0, poke_interval=1.0,
        )  # fmt: skip
        stopped = RestartStepSensor(
            task_id="wait_stopped", step="job_stopped", job=ctx["job"],
            timeout=STOP_TIMEOUT, retries=0, poke_interval=1.0,
        )  # fmt: skip
        begun >> asked >> answered >> stopped
    return group


@task(retries=1)
def start_same_version(ctx: dict[str, Any]) -> str:
    """Start the job's spec from the savepoint (once); the driver id."""
    intent = restart_step("start_from_savepoint", ctx["job"], fatal=False)
    return str(intent.new_driver)


def verify(ctx: XComArg, started: XComArg) -> TaskGroup:
    """Wait until the started driver is healthy; on failure fail with why."""
    with TaskGroup("verify", tooltip="wait healthy, report a failure") as group:
        wait = JobHealthySensor(
            task_id="wait_healthy", job=ctx["job"], since_driver=started, deferrable=True,
            timeout=HEALTH_TIMEOUT, poke_interval=2, retries=1, retry_delay=5.0,
        )  # fmt: skip  # a verdict fails it at once; a retry is for the orchestrator's errors
        back = rollback.override(task_id="rollback")(ctx, started.operator.task_id)
        finish = done.override(task_id="done")(ctx)
        [started, wait] >> back
        wait >> finish
    return group


@task(trigger_rule="one_failed", retries=0)
def rollback(ctx: dict[str, Any], start_task_id: str) -> None:
    """The started version is not healthy: fail the run with the reason (the savepoint is
    kept to start from again)."""
    from streamops.jobs import JobRegistry
    from streamops_airflow.hooks import ops_settings

    if not ctx:
        raise AirflowSkipException("nothing to report: the run failed before it began")
    job, savepoint = ctx["job"], ctx["savepoint"]
    driver = get_current_context()["ti"].xcom_pull(task_ids=start_task_id)
    registry = JobRegistry(ops_settings())
    view = registry.view(job)
    reason = (f"driver {driver or '(none started)'} is {view.state}; "
              f"{registry.failure_detail(view, driver)}")  # fmt: skip
    raise ProcedureFailed(
        f"job {job} did not become healthy after the restart ({reason}); savepoint "
        f"{savepoint} is kept: run restart_job again, or `streamops restore`"
    )


@task(retries=2)
def done(ctx: dict[str, Any]) -> dict[str, Any]:
    """Healthy (the library's verify, at once) → done; the job's state for the run's XCom."""
    intent = restart_step("verify", ctx["job"], timeout=HEALTH_TIMEOUT)
    log.info("job %s v%s is healthy on driver %s", intent.job, intent.version, intent.new_driver)
    return {"job": intent.job, "version": intent.version, "driver_id": intent.new_driver}
