"""Task groups shared by the job DAGs (upgrade, restart): one task per procedure step.

Every group takes ``ctx``, the output of a task with ``multiple_outputs=True`` holding at
least ``job`` and ``savepoint`` (and, for an upgrade, ``spec_path``, ``stages``,
``rollback_spec``, ``from_version``, ``to_version``). Each step calls one procedure of the
ops library and records its intent in ``jobs/<job>/<procedure>.json`` before anything
destructive, so a retried task resumes instead of repeating harm:

    savepoint_with_cancel:  request (intent + control request) → wait_result (sensor)
    start_*:                start a version from the savepoint (intent; no second driver)
    verify:                 wait_healthy (deferrable sensor) → rollback on failure → done
"""

from __future__ import annotations

import logging
from typing import Any

from airflow.sdk import TaskGroup, XComArg, get_current_context, task

from streamops.intents import record_intent
from streamops.jobs import JobRegistry
from streamops.restart import already_started, restart_from_savepoint
from streamops.restore import start_from_savepoint, wait_driver_ended
from streamops.spec import load_spec, spec_from_dict
from streamops.upgrade import rollback as rollback_job
from streamops_airflow.exceptions import ProcedureFailed
from streamops_airflow.hooks import SparkStandaloneHook
from streamops_airflow.operators import RequestSavepointOperator, run_owner
from streamops_airflow.sensors import JobHealthySensor, SavepointResultSensor

log = logging.getLogger("streamops.airflow")

HEALTH_TIMEOUT = 300.0
SAVEPOINT_TIMEOUT = 240.0


def savepoint_with_cancel(ctx: XComArg, *, procedure: str, handover: bool = False) -> TaskGroup:
    """Savepoint the running job and stop it once the copy is verified. ``handover`` (an
    upgrade, whose next task starts the new version of ``ctx["spec_path"]`` with
    ``replacing=`` the old driver): done once the answer is in; the old driver idles, lease
    given up, until the new version runs (if the cluster has the cores for both)."""
    with TaskGroup("savepoint_with_cancel", tooltip="savepoint, then stop the job") as group:
        request = RequestSavepointOperator(
            task_id="request", job=ctx["job"], savepoint=ctx["savepoint"], cancel=True,
            procedure=procedure, request_timeout=SAVEPOINT_TIMEOUT - 60,
            handover_spec=ctx["spec_path"] if handover else None,
        )  # fmt: skip
        SavepointResultSensor(
            task_id="wait_result", job=ctx["job"], request_id=request.output, cancel=True,
            timeout=SAVEPOINT_TIMEOUT, retries=0, poke_interval=1.0,
        )  # fmt: skip
    return group


@task(retries=1)
def start_new_version(ctx: dict[str, Any]) -> str:
    """Upgrade: start the new spec from the savepoint (stages by name); the driver id. The old
    driver (``ctx["old_driver"]``) may still be idling after its handover: it is allowed."""
    settings = SparkStandaloneHook().settings
    job, savepoint = ctx["job"], ctx["savepoint"]
    base = {"savepoint": savepoint, "from_version": ctx["from_version"],
            "to_version": ctx["to_version"]}  # fmt: skip
    owner = run_owner(get_current_context())
    done = already_started(settings, job, "upgrade", "start-new-version", owner=owner)
    if done:
        return done
    record_intent(settings, job, "upgrade", "start-new-version", owner=owner, **base)
    spec = load_spec(ctx["spec_path"])
    return start_from_savepoint(spec, settings, savepoint, ctx["stages"], wait_healthy=None,
                                replacing=ctx.get("old_driver"))  # fmt: skip


@task(retries=1)
def start_same_version(ctx: dict[str, Any]) -> str:
    """Restart: start the job's last spec from the savepoint; the driver id."""
    settings = SparkStandaloneHook().settings
    return restart_from_savepoint(settings, ctx["job"], ctx["savepoint"], wait_healthy=None,
                                  owner=run_owner(get_current_context()))  # fmt: skip


def verify(ctx: XComArg, started: XComArg, *, procedure: str) -> TaskGroup:
    """Wait until the started driver is healthy; on failure roll back (or fail with why)."""
    start_task_id = started.operator.task_id
    with TaskGroup("verify", tooltip="wait healthy, roll back on failure") as group:
        wait = JobHealthySensor(
            task_id="wait_healthy", job=ctx["job"], since_driver=started, deferrable=True,
            timeout=HEALTH_TIMEOUT, poke_interval=2, retries=0,
        )  # fmt: skip
        back = rollback.override(task_id="rollback")(ctx, start_task_id, procedure)
        finish = done.override(task_id="done")(ctx, wait.output, procedure)
        [started, wait] >> back
        wait >> finish
    return group


@task(trigger_rule="one_failed", retries=0)
def rollback(ctx: dict[str, Any], start_task_id: str, procedure: str) -> None:
    """The started version is not healthy: restart the old version from the same savepoint
    (upgrade) and fail the run with the reason."""
    settings = SparkStandaloneHook().settings
    job, savepoint = ctx["job"], ctx["savepoint"]
    driver = get_current_context()["ti"].xcom_pull(task_ids=start_task_id)
    registry = JobRegistry(settings)
    view = registry.view(job)
    reason = (f"driver {driver or '(none started)'} is {view.state}; "
              f"{registry.failure_detail(view, driver)}")  # fmt: skip
    old = ctx.get("rollback_spec")
    if not old:
        raise ProcedureFailed(
            f"job {job} did not become healthy after the {procedure} ({reason}); savepoint "
            f"{savepoint} is kept: run restart_job again, or `streamops restore`"
        )
    old_spec = spec_from_dict(old, f"rollback spec of {job}")
    base = {"savepoint": savepoint, "from_version": old_spec.version,
            "to_version": ctx.get("to_version")}  # fmt: skip
    record_intent(settings, job, procedure, "rollback", reason=reason[:2000], **base)
    # the new version's driver if it still runs, and the old one if it still waits to hand over
    rollback_job(settings, job, old_spec, savepoint, HEALTH_TIMEOUT,
                 stop=(driver, ctx.get("old_driver")))  # fmt: skip
    record_intent(settings, job, procedure, "rolled-back", reason=reason[:2000], **base)
    raise ProcedureFailed(
        f"job {job} v{ctx.get('to_version')} did not become healthy ({reason}); rolled back "
        f"to v{old_spec.version} from savepoint {savepoint}"
    )


@task(retries=2)
def done(ctx: dict[str, Any], driver: str | None, procedure: str) -> dict[str, Any]:
    """Record the end of the procedure; return the job's state for the run's XCom."""
    settings = SparkStandaloneHook().settings
    if ctx.get("old_driver") and ctx["old_driver"] != driver:
        wait_driver_ended(settings, ctx["job"], ctx["old_driver"])  # after its handover
    view = JobRegistry(settings).view(ctx["job"])
    record_intent(settings, ctx["job"], procedure, "done", savepoint=ctx.get("savepoint"),
                  driver_id=driver, version=view.version)  # fmt: skip
    log.info("job %s v%s is healthy on driver %s", view.name, view.version, view.driver_id)
    return {"job": view.name, "version": view.version, "driver_id": view.driver_id}
