"""Task groups shared by the job DAGs (upgrade, restart): one task per procedure step.

Every group takes ``ctx``, the output of a task with ``multiple_outputs=True`` holding at
least ``job`` and ``savepoint`` (and, for an upgrade, ``spec_path``, ``stages``,
``rollback_spec``, ``from_version``, ``to_version``). Each step calls one procedure of the
ops library and records its intent in ``jobs/<job>/<procedure>.json`` before anything
destructive, so a retried task resumes instead of repeating harm:

    start_standby:          (upgrade, warm) the new version's driver up and ready beside the
                            old one; abort_standby kills it if the savepoint fails
    savepoint_with_cancel:  request (intent + control request) → wait_result (sensor)
    start_*:                start a version from the savepoint (intent; no second driver), or
                            release the standby
    verify:                 wait_healthy (deferrable sensor) → rollback on failure → done
"""

from __future__ import annotations

import logging
from typing import Any

from airflow.sdk import TaskGroup, XComArg, get_current_context, task
from airflow.sdk.exceptions import AirflowSkipException

from streamops import standby as standbys
from streamops.exceptions import SavepointNotFound
from streamops.intents import already_started, record_intent
from streamops.jobs import JobRegistry
from streamops.restart import restart_from_savepoint
from streamops.restore import start_from_savepoint
from streamops.savepoint_taking import wait_driver_ended
from streamops.savepoints import get_savepoint
from streamops.spec import load_spec, spec_from_dict
from streamops.standby import Standby
from streamops.upgrade import UpgradeFailed, start_warm_standby
from streamops.upgrade import rollback as rollback_job
from streamops_airflow.exceptions import ProcedureFailed
from streamops_airflow.hooks import ops_settings
from streamops_airflow.operators import RequestSavepointOperator, run_owner
from streamops_airflow.sensors import JobHealthySensor, SavepointResultSensor

log = logging.getLogger("streamops.airflow")

HEALTH_TIMEOUT = 300.0
SAVEPOINT_TIMEOUT = 240.0


def _upgrade_fields(ctx: dict[str, Any]) -> dict[str, Any]:
    """The fields every intent record of an upgrade step carries."""
    return {"savepoint": ctx["savepoint"], "from_version": ctx["from_version"],
            "to_version": ctx["to_version"]}  # fmt: skip


@task(retries=0)  # a retry would submit a second standby; nothing is stopped yet: re-run
def start_standby(ctx: dict[str, Any]) -> dict[str, Any]:
    """Upgrade, warm: submit the new version as a warm standby (session up, stages built and
    validated, executors warmed up) beside the running one and wait until it is ready; its
    description, or ``{}`` for a cold upgrade (``ctx["standby"]``: ``cold``; or ``auto`` and no
    worker has a free core for its driver). A standby that does not come up fails the run with
    the old version untouched."""
    settings = ops_settings()
    job, spec = ctx["job"], load_spec(ctx["spec_path"])
    if not standbys.wants_standby(JobRegistry(settings), spec, ctx.get("standby", "cold")):
        log.info("upgrade of %s: cold: v%s starts once v%s has stopped", job, spec.version,
                 ctx["from_version"])  # fmt: skip
        return {}
    try:
        ready = start_warm_standby(settings, spec, ctx.get("new_stages", []),
                                   _upgrade_fields(ctx), timeout=HEALTH_TIMEOUT)  # fmt: skip
    except UpgradeFailed as exc:
        raise ProcedureFailed(str(exc)) from exc
    return ready.to_dict()


@task(trigger_rule="one_failed", retries=0)
def abort_standby(standby_task_id: str) -> None:
    """The savepoint failed: kill the standby started for it, if any (the old version runs on,
    or is restarted by hand from its last checkpoint)."""
    ready = get_current_context()["ti"].xcom_pull(task_ids=standby_task_id)
    if not ready:
        raise AirflowSkipException("no standby to abort (a cold upgrade, or none came up)")
    standbys.abort_standby(ops_settings(), Standby.from_dict(ready))


def savepoint_with_cancel(
    ctx: XComArg, *, procedure: str, handover: bool = False, standby: XComArg | None = None
) -> TaskGroup:
    """Savepoint the running job and stop it once the copy is verified. ``handover`` (an
    upgrade, whose next task starts the new version of ``ctx["spec_path"]`` with
    ``replacing=`` the old driver, or releases the warm ``standby``): done once the answer is
    in; the old driver idles, lease given up, until the new version runs (if the cluster has
    the cores for what the new version still needs)."""
    with TaskGroup("savepoint_with_cancel", tooltip="savepoint, then stop the job") as group:
        request = RequestSavepointOperator(
            task_id="request", job=ctx["job"], savepoint=ctx["savepoint"], cancel=True,
            procedure=procedure, request_timeout=SAVEPOINT_TIMEOUT - 60,
            handover_spec=ctx["spec_path"] if handover else None, handover_standby=standby,
        )  # fmt: skip
        SavepointResultSensor(
            task_id="wait_result", job=ctx["job"], request_id=request.output, cancel=True,
            driver=ctx["old_driver"] if handover else None,
            timeout=SAVEPOINT_TIMEOUT, retries=0, poke_interval=1.0,
        )  # fmt: skip
    return group


@task(retries=1)
def start_new_version(ctx: dict[str, Any], standby: dict[str, Any] | None = None) -> str:
    """Upgrade: start the new spec from the savepoint (stages by name), or release the warm
    ``standby`` from it; the driver id. The old driver (``ctx["old_driver"]``) may still be
    idling after its handover: it is allowed."""
    settings = ops_settings()
    job, savepoint = ctx["job"], ctx["savepoint"]
    base = _upgrade_fields(ctx)
    owner = run_owner(get_current_context())
    if standby:
        ready = Standby.from_dict(standby)
        if not standbys.released(settings, ready):  # else a previous try released it: resume
            record_intent(settings, job, "upgrade", "start-new-version", owner=owner,
                          standby=ready.driver_id, **base)  # fmt: skip
            standbys.release_standby(settings, ready, savepoint, ctx["stages"])
        return ready.driver_id
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
    settings = ops_settings()
    return restart_from_savepoint(settings, ctx["job"], ctx["savepoint"], wait_healthy=None,
                                  owner=run_owner(get_current_context()))  # fmt: skip


def verify(
    ctx: XComArg, started: XComArg, *, procedure: str, standby: XComArg | None = None
) -> TaskGroup:
    """Wait until the started driver is healthy; on failure roll back (or fail with why). A
    warm ``standby`` that the start did not release is stopped by the rollback too."""
    start_task_id = started.operator.task_id
    standby_task_id = standby.operator.task_id if standby is not None else None
    with TaskGroup("verify", tooltip="wait healthy, roll back on failure") as group:
        wait = JobHealthySensor(
            task_id="wait_healthy", job=ctx["job"], since_driver=started, deferrable=True,
            timeout=HEALTH_TIMEOUT, poke_interval=2, retries=0,
        )  # fmt: skip
        back = rollback.override(task_id="rollback")(
            ctx, start_task_id, procedure, standby_task_id
        )
        finish = done.override(task_id="done")(ctx, wait.output, procedure)
        [started, wait] >> back
        wait >> finish
    return group


@task(trigger_rule="one_failed", retries=0)
def rollback(
    ctx: dict[str, Any], start_task_id: str, procedure: str, standby_task_id: str | None = None
) -> None:
    """The started version is not healthy: restart the old version from the same savepoint
    (upgrade) and fail the run with the reason. Skipped when the run failed before it
    stopped anything (no plan, no standby, no savepoint): the old version runs on."""
    if not ctx:  # the plan failed: its output is missing
        raise AirflowSkipException("nothing to roll back: the run failed before its plan")
    settings = ops_settings()
    job, savepoint = ctx["job"], ctx["savepoint"]
    if ctx.get("rollback_spec"):
        # an upgrade: the old driver stops only once the savepoint is verified, so without it
        # nothing was stopped (a standby that did not come up, a failed savepoint)
        try:
            get_savepoint(settings.layout, savepoint, job=job)
        except SavepointNotFound:
            raise AirflowSkipException(
                f"nothing to roll back: savepoint {savepoint} was not taken, so this run did "
                f"not stop v{ctx.get('from_version')} of {job}"
            ) from None
    ti = get_current_context()["ti"]
    driver = ti.xcom_pull(task_ids=start_task_id)
    ready = ti.xcom_pull(task_ids=standby_task_id) if standby_task_id else None
    standby_driver = Standby.from_dict(ready).driver_id if ready else None
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
                 stop=(driver, standby_driver, ctx.get("old_driver")))  # fmt: skip
    record_intent(settings, job, procedure, "rolled-back", reason=reason[:2000], **base)
    raise ProcedureFailed(
        f"job {job} v{ctx.get('to_version')} did not become healthy ({reason}); rolled back "
        f"to v{old_spec.version} from savepoint {savepoint}"
    )


@task(retries=2)
def done(ctx: dict[str, Any], driver: str | None, procedure: str) -> dict[str, Any]:
    """Record the end of the procedure; return the job's state for the run's XCom."""
    settings = ops_settings()
    if ctx.get("old_driver") and ctx["old_driver"] != driver:
        wait_driver_ended(settings, ctx["job"], ctx["old_driver"])  # after its handover
    view = JobRegistry(settings).view(ctx["job"])
    record_intent(settings, ctx["job"], procedure, "done", savepoint=ctx.get("savepoint"),
                  driver_id=driver, version=view.version)  # fmt: skip
    log.info("job %s v%s is healthy on driver %s", view.name, view.version, view.driver_id)
    return {"job": view.name, "version": view.version, "driver_id": view.driver_id}
