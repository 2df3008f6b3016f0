"""Act: carry out one decided action through the procedure kit (:mod:`streamops.procedures`:
the start, the upgrade with its plan and rollback, the savepoint with or without cancel, the
restarts), on the operations port the reconcile pass gives it. The one module of the
declarative package that runs procedures; :mod:`~streamops.declarative.reconcile` only makes
the port.

Every action runs over its :class:`~streamops.declarative.inflight.InFlight` record, which the
reconcile saved before calling here, and resumes from it: the savepoints keep their
:class:`SavepointCancel` in it (a request is sent once, never a second cancel), the upgrade and
the restart from a savepoint are owned by the record (``InFlight.owner``), so their own
intents resume, and a start looks for the driver a killed pass submitted before submitting.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from streamops.declarative.inflight import InFlight
from streamops.exceptions import JobError, JobNotFound, StreamopsError
from streamops.job_reads import read_submissions
from streamops.procedures import restart as restarts
from streamops.procedures import savepoint_restart, savepoint_taking, upgrade_steps
from streamops.procedures.deploy import start_job
from streamops.procedures.savepoint_taking import SavepointCancel
from streamops.procedures.step_runner import run_steps
from streamops.procedures.upgrade import UpgradeFailed, UpgradeRefused, upgrade
from streamops.procedures.upgrade_plan import plan_upgrade
from streamops.spec import JobSpec, spec_from_dict
from streamops.state.declarative.resources import Deployment, SavepointRequest
from streamops.state.savepoints import catalogue
from streamops.timeouts import (
    HEALTH_TIMEOUT,
    REQUEST_TIMEOUT,
    SAVEPOINT_TIMEOUT,
    STOP_TIMEOUT,
)
from streamops.world.operations import Operations
from streamops.world.restore import clear_stale_checkpoint

log = logging.getLogger("streamops.declarative.act")


Save = Callable[[InFlight], None]


@dataclass
class Outcome:
    """What an action did, for the status."""

    message: str
    driver: str | None = None
    savepoint: str | None = None  # a savepoint it took (with its kind for the history)
    savepoint_kind: str | None = None
    blocked_plan: str | None = None  # the upgrade plan refused: its text
    failed: str | None = None  # the action failed (the job was left as the message says)
    times: dict[str, float] = field(default_factory=dict)


def savepoint_name(job: str, purpose: str, now: float | None = None) -> str:
    now = time.time() if now is None else now
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime(now)) + f"-{int(now * 1000) % 1000:03d}"
    return re.sub(r"[^a-z0-9._-]", "-", f"{job}-{purpose}-{stamp}".lower())[-63:].lstrip("-._")


def prepare(record: InFlight, job: str) -> None:
    """Fix an action's arguments in its record before it starts (the savepoint names)."""
    purposes = {"suspend": "suspend", "periodic-savepoint": "periodic",
                "restart-savepoint": "restart", "upgrade": "upgrade"}  # fmt: skip
    if record.action in purposes and "savepoint" not in record.detail:
        record.detail["savepoint"] = savepoint_name(job, purposes[record.action])


# --- helpers ---------------------------------------------------------------------------
def _started_since(ops: Operations, job: str, since: float) -> str | None:
    """The live driver of ``job`` submitted after ``since`` (by a pass that was killed)."""
    subs = [s for s in read_submissions(ops.layout.submissions_file(job))
            if s.get("event") == "submitted" and float(s.get("at", 0)) >= since
            and not s.get("standby") and not s.get("hot_standby")]  # fmt: skip
    for sub in reversed(subs):
        if ops.registry.driver_live(str(sub["driver_id"])):
            return str(sub["driver_id"])
    return None


def _stages(ops: Operations, spec: JobSpec, savepoint: str) -> list[str]:
    """The stages ``spec`` runs: the savepoint's when it is of the same version, else as the
    version describes them (a new stage starts empty, a stage gone is left in the savepoint)."""
    manifest = ops.savepoints.get(savepoint, spec.name)
    if manifest.version == spec.version:
        return list(manifest.stages)
    return list(ops.submitter.describe_stages(spec))


def _savepoint(ops: Operations, record: InFlight, save: Save, job: str, name: str,
               cancel: bool) -> SavepointCancel:  # fmt: skip
    """The savepoint (with cancel) of ``job``, its steps kept in ``record`` (resumable)."""
    sp = (SavepointCancel.from_dict(record.detail["cancel"]) if "cancel" in record.detail
          else SavepointCancel(job, name, cancel=cancel))  # fmt: skip

    def keep(value: SavepointCancel, phase: str) -> None:
        record.detail["cancel"], record.detail["phase"] = value.to_dict(), phase
        save(record)

    if "request" not in sp.done and sp.request is None:
        view = ops.registry.view(job)
        if not view.is_live:
            raise JobNotFound(f"job {job} is not running (state {view.state}); nothing to "
                              "savepoint")  # fmt: skip
    run_steps(savepoint_taking.STEPS, ops, sp, keep,
              waits={"request": REQUEST_TIMEOUT, "answered": SAVEPOINT_TIMEOUT,
                     "stopped": STOP_TIMEOUT})  # fmt: skip
    return sp


# --- the actions -----------------------------------------------------------------------
def deploy(ops: Operations, record: InFlight, save: Save, dep: Deployment) -> Outcome:
    spec = spec_from_dict(record.detail["spec"], f"spec of deployment {dep.name}")
    savepoint = record.detail.get("savepoint")
    driver = _started_since(ops, spec.name, record.started_at)
    if driver is not None:
        log.info("deployment %s: driver %s was submitted by a previous pass; waiting for it",
                 dep.name, driver)  # fmt: skip
        ops.registry.wait_healthy(spec.name, timeout=HEALTH_TIMEOUT, since_driver=driver)
    elif savepoint:
        driver = ops.submitter.start_from_savepoint(spec, savepoint, _stages(ops, spec, savepoint),
                                                    wait_healthy=HEALTH_TIMEOUT)  # fmt: skip
    else:
        driver = start_job(ops, spec, owner=record.owner, wait_healthy=HEALTH_TIMEOUT)
    how = f" from savepoint {savepoint}" if savepoint else ""
    return Outcome(f"v{spec.version} running{how}", driver=driver)


def upgrade_job(ops: Operations, record: InFlight, save: Save, dep: Deployment) -> Outcome:
    spec = spec_from_dict(record.detail["spec"], f"spec of deployment {dep.name}")
    if dep.upgrade.mode != "savepoint":
        return _replace(ops, record, save, dep, spec)
    intent = upgrade_steps.load_intent(ops, spec.name)
    if intent is not None and intent.owner == record.owner and intent.finished:
        return _upgrade_ended(intent)  # a pass killed after the upgrade ended
    if not record.detail.get("planned"):
        plan = plan_upgrade(ops, spec.name, spec,
                            allow_state_drop=dep.upgrade.allow_state_drop)  # fmt: skip
        if not plan.allowed:
            return Outcome(f"upgrade to v{spec.version} refused by its plan: {plan.refusal}",
                           blocked_plan=plan.render())  # fmt: skip
        record.detail["planned"] = True
        save(record)
    try:
        done = upgrade(ops, spec.name, spec, allow_state_drop=dep.upgrade.allow_state_drop,
                       savepoint=record.detail["savepoint"], standby=dep.upgrade_standby,
                       owner=record.owner, health_timeout=HEALTH_TIMEOUT)  # fmt: skip
    except UpgradeRefused as exc:
        return Outcome(str(exc), blocked_plan=str(exc))
    except UpgradeFailed as exc:
        return Outcome(str(exc), failed=str(exc), savepoint=record.detail["savepoint"],
                       savepoint_kind="upgrade")  # fmt: skip
    return Outcome(f"upgraded v{done.from_version} → v{done.to_version} from savepoint "
                   f"{done.savepoint}", driver=done.driver_id, savepoint=done.savepoint,
                   savepoint_kind="upgrade",
                   times={"savepoint_s": done.savepoint_s, "start_s": done.start_s})  # fmt: skip


def _upgrade_ended(intent: upgrade_steps.UpgradeIntent) -> Outcome:
    if intent.phase == "done":
        return Outcome(f"upgraded v{intent.from_version} → v{intent.to_version}",
                       driver=intent.new_driver, savepoint=intent.savepoint,
                       savepoint_kind="upgrade")  # fmt: skip
    return Outcome(f"upgrade {intent.phase}: {intent.reason}", failed=f"upgrade "
                   f"{intent.phase}: {intent.reason}")  # fmt: skip


def _replace(ops: Operations, record: InFlight, save: Save, dep: Deployment,
             spec: JobSpec) -> Outcome:  # fmt: skip
    """Upgrade modes ``last-state`` (stop, start on the checkpoints) and ``stateless`` (stop,
    start with the checkpoints of the running stages cleared)."""
    driver = _started_since(ops, spec.name, record.started_at)
    if driver is None:
        if "stages" not in record.detail:
            view = ops.registry.view(spec.name)
            record.detail["stages"] = sorted(view.stages)
            save(record)
        restarts.stop_for_restart(ops, spec.name, record.owner)
        if dep.upgrade.mode == "stateless":
            for stage in record.detail["stages"]:
                clear_stale_checkpoint(ops.settings, spec.name, stage)
        driver = start_job(ops, spec, owner=record.owner, wait_healthy=HEALTH_TIMEOUT)
    else:
        ops.registry.wait_healthy(spec.name, timeout=HEALTH_TIMEOUT, since_driver=driver)
    return Outcome(f"v{spec.version} running ({dep.upgrade.mode})", driver=driver)


def suspend(ops: Operations, record: InFlight, save: Save, dep: Deployment) -> Outcome:
    """A savepoint with cancel; one that fails still stops the job (a suspend always goes
    through): it is cancelled, and resumes from its last checkpoints."""
    name = record.detail["savepoint"]
    try:
        _savepoint(ops, record, save, dep.name, name, cancel=True)
    except JobNotFound as exc:
        return Outcome(f"suspended; the job was not running ({exc})")
    except StreamopsError as exc:
        log.warning("deployment %s: the suspend's savepoint failed (%s); cancelling the job",
                    dep.name, exc)  # fmt: skip
        if ops.registry.view(dep.name).is_live:
            ops.registry.cancel(dep.name)
        return Outcome(f"suspended without a savepoint ({exc}); it resumes from its last "
                       "checkpoints")  # fmt: skip
    return Outcome(f"suspended to savepoint {name}", savepoint=name, savepoint_kind="suspend")


def restart_from_checkpoint(ops: Operations, record: InFlight, save: Save,
                            dep: Deployment) -> Outcome:  # fmt: skip
    try:
        done = restarts.restart_job(ops, dep.name, "last-checkpoint", owner=record.owner,
                                    health_timeout=HEALTH_TIMEOUT)  # fmt: skip
    except JobError as exc:
        raise JobError(f"restart of {dep.name} from its last checkpoint failed: {exc}") from exc
    return Outcome("restarted from its last checkpoint", driver=done.driver_id)


def restart_from_savepoint(ops: Operations, record: InFlight, save: Save,
                           dep: Deployment) -> Outcome:  # fmt: skip
    name = record.detail["savepoint"]
    intent = savepoint_restart.load_intent(ops, dep.name)
    if intent is not None and intent.owner == record.owner and intent.finished and (
        not intent.closed_failed
    ):
        driver = intent.new_driver  # a pass killed after the restart ended
    else:
        driver = restarts.restart_job(ops, dep.name, "savepoint", savepoint=name,
                                      owner=record.owner,
                                      health_timeout=HEALTH_TIMEOUT).driver_id  # fmt: skip
    return Outcome(f"restarted from savepoint {name} (restart_nonce {dep.restart_nonce})",
                   driver=driver, savepoint=name, savepoint_kind="restart")  # fmt: skip


def periodic_savepoint(ops: Operations, record: InFlight, save: Save,
                       dep: Deployment) -> Outcome:  # fmt: skip
    name = record.detail["savepoint"]
    _savepoint(ops, record, save, dep.name, name, cancel=False)
    return Outcome(f"periodic savepoint {name} taken", savepoint=name, savepoint_kind="periodic")


def prune(ops: Operations, record: InFlight, save: Save, dep: Deployment) -> Outcome:
    layout = ops.layout
    protected = catalogue.protected_savepoints(layout)
    gone = []
    for name in record.detail.get("names", []):
        try:
            catalogue.delete_savepoint(layout, name, protected=protected)
        except StreamopsError as exc:
            if not layout.savepoint(name).exists():
                gone.append(name)  # deleted by a pass that was killed
                continue
            log.warning("deployment %s: savepoint %s kept: %s", dep.name, name, exc)
            continue
        gone.append(name)
    record.detail["pruned"] = gone
    return Outcome(f"pruned {len(gone)} savepoint(s): {', '.join(gone) or 'none'}")


DEPLOYMENT_ACTIONS: dict[str, Callable[[Operations, InFlight, Save, Deployment], Outcome]] = {
    "deploy": deploy, "upgrade": upgrade_job, "suspend": suspend,
    "restart-last-checkpoint": restart_from_checkpoint,
    "restart-savepoint": restart_from_savepoint, "periodic-savepoint": periodic_savepoint,
    "prune": prune,
}  # fmt: skip


def act_deployment(ops: Operations, record: InFlight, save: Save, dep: Deployment) -> Outcome:
    return DEPLOYMENT_ACTIONS[record.action](ops, record, save, dep)


def take_savepoint(ops: Operations, record: InFlight, save: Save,
                   request: SavepointRequest) -> tuple[Outcome, float]:  # fmt: skip
    """A savepoint request's savepoint; the outcome and the savepoint's creation time."""
    sp = _savepoint(ops, record, save, request.job, request.name, cancel=request.cancel)
    manifest = ops.savepoints.get(request.name, request.job)
    what = " with cancel" if request.cancel else ""
    return Outcome(f"savepoint {request.name}{what} exported in "
                   f"{sp.answer.get('duration_s', '?')}s", savepoint=request.name), float(
        manifest.created_at)  # fmt: skip
