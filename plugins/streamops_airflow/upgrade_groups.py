"""The ``savepoint_and_upgrade`` DAG's tasks: each runs (or polls) one step function of
:mod:`streamops.procedures.upgrade_steps`, the steps the CLI runs through the step runner, for
the DAG run that owns the upgrade's intent (a retried task resumes from it; see
:func:`upgrade_step`)::

    plan → start_standby → savepoint_with_cancel.request → savepoint_with_cancel.wait_result
         → start_new_version → verify.wait_healthy → verify.done (verify, finish)
    abort_standby (the savepoint failed), verify.rollback (not healthy)

``verify.wait_healthy`` is the shared deferrable :class:`JobHealthySensor`; ``verify.done``
then runs the library's ``verify`` (at once: healthy already) and ``finish``.
"""

from __future__ import annotations

from typing import Any

from airflow.sdk import TaskGroup, XComArg, get_current_context, task
from airflow.sdk.exceptions import AirflowSkipException

from streamops.exceptions import UpgradeFailed, UpgradeRefused
from streamops.procedures import upgrade_steps as steps
from streamops.timeouts import HEALTH_TIMEOUT, REQUEST_TIMEOUT, SAVEPOINT_TIMEOUT
from streamops_airflow.procedure_tasks import Step, StepSensor, job_step
from streamops_airflow.sensors import JobHealthySensor

FATAL = (UpgradeRefused, UpgradeFailed)


def upgrade_step(step: Step, job: str, *args: Any, **kwargs: Any) -> Any:
    """Run ``step`` (a function of :mod:`streamops.procedures.upgrade_steps`) on ``job`` for
    this DAG run; a refused plan or a failed upgrade fails the task (no retry) with its
    reason."""
    return job_step(step, job, *args, fatal=FATAL, **kwargs)


@task(multiple_outputs=True)
def plan(ctx: dict[str, Any]) -> dict[str, Any]:
    """Dry run: nothing stops. The plan is printed; a refused plan fails the run here. The new
    spec comes by value from ``validate`` (the one read of its file) and is kept in the
    upgrade's intent: the version planned is the version started."""
    from streamops.spec import spec_from_dict

    intent = upgrade_step(
        steps.plan, ctx["job"], spec_from_dict(ctx["spec"], ctx["spec_path"]),
        savepoint=ctx["savepoint"], allow_state_drop=ctx["allow_state_drop"],
        standby=ctx["standby"], now=bool(ctx.get("now")),
    )  # fmt: skip
    print(intent.plan)
    return {"job": intent.job, "savepoint": intent.savepoint,
            "from_version": intent.from_version, "to_version": intent.to_version}  # fmt: skip


@task(retries=0)  # nothing is stopped yet: a failed standby fails the run, re-run it
def start_standby(ctx: dict[str, Any]) -> dict[str, Any]:
    """Warm: the new version's driver up and ready beside the old one (its description); cold
    (``standby`` cold, or auto and no free core for its driver): ``{}``."""
    return upgrade_step(steps.start_standby, ctx["job"], timeout=HEALTH_TIMEOUT).standby or {}


@task(trigger_rule="one_failed", retries=0)
def abort_standby(plan_task_id: str) -> None:
    """The savepoint failed: kill the standby started for it, if any (the old version runs on,
    or is restarted by hand from its last checkpoint)."""
    job = get_current_context()["ti"].xcom_pull(task_ids=plan_task_id, key="job")
    if not job or not upgrade_step(steps.abort_standby, job):
        raise AirflowSkipException("no standby to abort (a cold upgrade, or none came up)")


@task(retries=1)
def request(ctx: dict[str, Any]) -> str:
    """Ask the old driver for the savepoint with cancel (and whether it hands over)."""
    return str(upgrade_step(steps.request_savepoint, ctx["job"],
                            timeout=REQUEST_TIMEOUT).request)  # fmt: skip


def savepoint_with_cancel(ctx: XComArg, standby: XComArg) -> TaskGroup:
    """Savepoint the running job and stop it once the copy is verified (or let it idle until
    the new version runs, after a handover)."""
    with TaskGroup("savepoint_with_cancel", tooltip="savepoint, then stop the job") as group:
        asked = request.override(task_id="request")(ctx)
        answered = StepSensor(
            task_id="wait_result", step=steps.savepoint_answered, job=ctx["job"], fatal=FATAL,
            timeout=SAVEPOINT_TIMEOUT, retries=0, poke_interval=1.0,
        )  # fmt: skip
        standby >> asked >> answered
    return group


@task(retries=1)
def start_new_version(ctx: dict[str, Any]) -> str:
    """Start the new version from the savepoint, or release the warm standby; the driver id."""
    return str(upgrade_step(steps.start_new_version, ctx["job"]).new_driver)


@task(trigger_rule="one_failed", retries=0)
def rollback(ctx: dict[str, Any] | None) -> None:
    """The new version is not healthy: restart the old one from the same savepoint and fail
    the run with the reason. Skipped when the run stopped nothing (it failed at its plan, its
    standby or its savepoint): the old version runs on."""
    from streamops_airflow.exceptions import ProcedureFailed

    if not ctx:  # the plan failed: its output is missing
        raise AirflowSkipException("nothing to roll back: the run failed before its plan")
    undo = upgrade_step(steps.rollback, ctx["job"], timeout=HEALTH_TIMEOUT)
    if not undo.rolled_back:
        raise AirflowSkipException(undo.message)
    raise ProcedureFailed(undo.message)


@task(retries=2)
def done(ctx: dict[str, Any]) -> dict[str, Any]:
    """Healthy (the library's check) and the old driver ended → done; the job's state."""
    upgrade_step(steps.verify, ctx["job"], timeout=HEALTH_TIMEOUT)
    intent = upgrade_step(steps.finish, ctx["job"])
    return {"job": intent.job, "version": intent.to_version, "driver_id": intent.new_driver}


def verify(ctx: XComArg, started: XComArg) -> TaskGroup:
    """Wait until the started driver is healthy; on failure roll back (and fail with why)."""
    with TaskGroup("verify", tooltip="wait healthy, roll back on failure") as group:
        wait = JobHealthySensor(
            task_id="wait_healthy", job=ctx["job"], since_driver=started, deferrable=True,
            timeout=HEALTH_TIMEOUT, poke_interval=2, retries=1, retry_delay=5.0,
        )  # fmt: skip  # a verdict fails it at once; a retry is for the orchestrator's errors
        back = rollback.override(task_id="rollback")(ctx)
        finish = done.override(task_id="done")(ctx)
        [started, wait] >> back
        wait >> finish
    return group
