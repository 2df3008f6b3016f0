"""Task groups of the ``restart_job`` DAG: each task runs, or polls, one step function of the
job's restart (:mod:`streamops.procedures.savepoint_restart` in mode ``savepoint``,
:mod:`streamops.procedures.restart` from the last checkpoint), the steps the CLI, the
rebalance and the cluster restart run, for the DAG run that owns the job's restart intent
``jobs/<job>/restart.json``; a retried task resumes from it (no second cancel, no second
submit). Every group takes ``ctx``, the output of a task with ``multiple_outputs=True``
holding at least ``job`` and ``savepoint``::

    savepoint_with_cancel:  begin → request → wait_result (sensor) → wait_stopped (sensor)
    start_same_version:     the job's spec submitted from the savepoint (once)
    verify:                 wait_healthy (deferrable sensor) → done (the library's verify),
                            or rollback: fail with why (the savepoint is kept)
    last_checkpoint:        stop → resubmit → wait_healthy (deferrable sensor)

The upgrade (``savepoint_and_upgrade``) runs the steps of :mod:`streamops.procedures.upgrade_steps`
instead: :mod:`streamops_airflow.upgrade_groups`.
"""

from __future__ import annotations

import logging
from typing import Any

from airflow.sdk import TaskGroup, XComArg, get_current_context, task
from airflow.sdk.exceptions import AirflowSkipException

from streamops.exceptions import JobError, StreamopsError
from streamops.procedures import restart, savepoint_restart
from streamops.timeouts import HEALTH_TIMEOUT, REQUEST_TIMEOUT, SAVEPOINT_TIMEOUT
from streamops.timeouts import STOP_SENSOR_TIMEOUT as STOP_TIMEOUT
from streamops_airflow.exceptions import ProcedureFailed
from streamops_airflow.procedure_tasks import StepSensor, job_step, this_run
from streamops_airflow.sensors import JobHealthySensor

log = logging.getLogger("streamops.airflow")

FATAL = (JobError,)  # a job not running, a failed or unanswered savepoint, another run's intent


def unchanged(mode: str) -> Any:
    """The restart's failure policy (the CLI's, :func:`restart.closed_unchanged`) for a step
    of ``mode`` before the job is stopped: one that failed having changed nothing (a failed
    savepoint, the driver running on) closes the run's intent as failed (health then warns
    and a new run begins afresh) and fails the task saying the job still runs."""

    def policy(ops: Any, job: str, owner: str, exc: Exception) -> Exception | None:
        if not isinstance(exc, StreamopsError):
            return None
        return restart.closed_unchanged(ops, job, owner, mode, exc)

    return policy


@task(retries=1)
def begin(ctx: dict[str, Any]) -> str:
    """Record the restart's intent (the job's spec, the savepoint name); the savepoint."""
    intent = job_step(savepoint_restart.begin, ctx["job"], savepoint=ctx["savepoint"],
                      fatal=FATAL)  # fmt: skip
    return str(intent.savepoint)


@task(retries=1)
def request(ctx: dict[str, Any]) -> str:
    """Ask the driver for the savepoint with cancel; the request id."""
    intent = job_step(savepoint_restart.request_savepoint, ctx["job"], timeout=REQUEST_TIMEOUT,
                      fatal=FATAL, on_failure=unchanged("savepoint"))  # fmt: skip
    return str(intent.savepoint_cancel().request)


def savepoint_with_cancel(ctx: XComArg) -> TaskGroup:
    """Savepoint the running job and stop it once the copy is verified."""
    with TaskGroup("savepoint_with_cancel", tooltip="savepoint, then stop the job") as group:
        begun = begin.override(task_id="begin")(ctx)
        asked = request.override(task_id="request")(ctx)
        answered = StepSensor(
            task_id="wait_result", step=savepoint_restart.savepoint_answered, job=ctx["job"],
            fatal=FATAL, on_failure=unchanged("savepoint"), timeout=SAVEPOINT_TIMEOUT,
            retries=0, poke_interval=1.0,
        )  # fmt: skip
        stopped = StepSensor(
            task_id="wait_stopped", step=savepoint_restart.job_stopped, job=ctx["job"],
            fatal=FATAL, on_failure=unchanged("savepoint"), timeout=STOP_TIMEOUT, retries=0,
            poke_interval=1.0,
        )  # fmt: skip
        begun >> asked >> answered >> stopped
    return group


@task(retries=1)
def start_same_version(ctx: dict[str, Any]) -> str:
    """Start the job's spec from the savepoint (once); the driver id."""
    return str(job_step(savepoint_restart.start_from_savepoint, ctx["job"]).new_driver)


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
    kept to start from again). A restart closed as failed before it stopped the job says so
    instead: nothing was changed."""
    from streamops_airflow import hooks

    if not ctx:
        raise AirflowSkipException("nothing to report: the run failed before it began")
    job, savepoint = ctx["job"], ctx["savepoint"]
    intent = savepoint_restart.load_intent(hooks.ops_operations(), job)
    if intent is not None and intent.closed_failed and intent.owner == this_run():
        failure = (intent.failure or "?").splitlines()[0]
        raise ProcedureFailed(f"the restart of {job} failed at {intent.failed_step}, having "
                              f"changed nothing: the job still runs ({failure}); run "
                              "restart_job again once the cause is fixed")  # fmt: skip
    driver = get_current_context()["ti"].xcom_pull(task_ids=start_task_id)
    registry = hooks.ops_operations().registry
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
    intent = job_step(savepoint_restart.verify, ctx["job"], timeout=HEALTH_TIMEOUT, fatal=FATAL)
    log.info("job %s v%s is healthy on driver %s", intent.job, intent.version, intent.new_driver)
    return {"job": intent.job, "version": intent.version, "driver_id": intent.new_driver}


@task(retries=0)
def stop(ctx: dict[str, Any]) -> str | None:
    """Cancel the job if it still runs (no savepoint); nothing to do if it is dead."""
    return job_step(restart.stop_for_restart, ctx["job"], on_failure=unchanged("last-checkpoint"))


@task
def resubmit(ctx: dict[str, Any]) -> str:
    """Submit the last spec again; it resumes from its checkpoints."""
    return str(job_step(restart.resubmit, ctx["job"]))


@task(retries=2)
def checkpoint_done(ctx: dict[str, Any]) -> dict[str, Any]:
    """Healthy (the library's verify, at once) → done."""
    intent = job_step(savepoint_restart.verify, ctx["job"], timeout=HEALTH_TIMEOUT, fatal=FATAL)
    return {"job": intent.job, "version": intent.version, "driver_id": intent.new_driver}


def last_checkpoint(ctx: XComArg) -> XComArg:
    """Stop → resubmit → healthy (deferred) → done; the first task (``stop``)."""
    first = stop(ctx)
    resubmitted = resubmit(ctx)
    wait = JobHealthySensor(
        task_id="wait_healthy", job=ctx["job"], since_driver=resubmitted, deferrable=True,
        timeout=HEALTH_TIMEOUT, retries=0,
    )  # fmt: skip
    first >> resubmitted >> wait >> checkpoint_done.override(task_id="done")(ctx)
    return first
