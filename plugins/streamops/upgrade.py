"""Savepoint-and-upgrade: Jet's ``save-snapshot --cancel`` then ``submit -s``, for Spark.

Observe → decide → act → record. The plan (section 5 of DESIGN.md) is computed and printed
before anything stops; a refused plan leaves the running job untouched. Then: savepoint
with cancel → start the new version from it → wait until healthy. If the new version does
not become healthy, the old version is restarted from the same savepoint and the procedure
fails with the reason. The intent of each destructive step is recorded first in
``jobs/<job>/upgrade.json``, so a person (or a retried task) sees where it stopped.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from streamops.exceptions import JobError, JobNotFound, StreamopsError
from streamops.intents import record_intent
from streamops.jobs import JobRegistry, current_spec
from streamops.planner import StageAction, UpgradePlan, describe_spec_stages
from streamops.restore import start_from_savepoint
from streamops.savepoint_taking import savepoint_job, wait_driver_ended
from streamops.settings import Settings
from streamops.spec import JobSpec
from streamops.standby import (
    Standby,
    abort_standby,
    handover_fits,
    release_standby,
    start_standby,
)

log = logging.getLogger("streamops.upgrade")


class UpgradeRefused(JobError):
    """The upgrade plan is not allowed; nothing was stopped."""


class UpgradeFailed(JobError):
    """The new version did not become healthy; the old one was restored from the savepoint."""


@dataclass(frozen=True)
class UpgradeOutcome:
    job: str
    from_version: str
    to_version: str
    savepoint: str
    driver_id: str
    plan: str
    savepoint_s: float
    start_s: float


def running_stages(settings: Settings, job: str) -> dict[str, dict[str, Any]]:
    """Stage descriptors the running driver published in its status."""
    view = JobRegistry(settings).view(job)
    if not view.is_live:
        raise JobNotFound(f"job {job} is not running (state {view.state}); nothing to upgrade")
    return {
        name: info.get("descriptor") or {"stateful": bool(info.get("stateful")), "operators": []}
        for name, info in view.stages.items()
    }


def plan_upgrade(
    settings: Settings, job: str, new_spec: JobSpec, *, allow_state_drop: bool = False
) -> UpgradePlan:
    """Dry run: compare the running stages with the new version's. Nothing stops."""
    if new_spec.name != job:
        raise UpgradeRefused(f"spec {new_spec.name} is not a version of job {job}")
    old = current_spec(settings, job)
    plan = UpgradePlan.build(
        job, running_stages(settings, job), describe_spec_stages(new_spec, settings),
        from_version=old.version, to_version=new_spec.version,
        allow_state_drop=allow_state_drop,
    )  # fmt: skip
    log.info("upgrade plan for %s:\n%s", job, plan.render())
    return plan


def default_savepoint_name(job: str, old: str, new: str) -> str:
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    raw = f"{job}-v{old}-to-v{new}-{stamp}".lower()
    return re.sub(r"[^a-z0-9._-]", "-", raw)[:63]


def _record(settings: Settings, job: str, phase: str, **fields: Any) -> None:
    record_intent(settings, job, "upgrade", phase, **fields)


def start_warm_standby(
    settings: Settings, new_spec: JobSpec, new_stages: Iterable[str], base: dict[str, Any],
    *, timeout: float,
) -> Standby:  # fmt: skip
    """Upgrade step: start ``new_spec`` as a warm standby beside the running version and wait
    until it is ready (``new_stages``: stages the running version lacks; ``base``: the intent
    fields, ``from_version`` included). A standby that does not come up raises
    :class:`UpgradeFailed`; the running version was not touched."""
    job = new_spec.name
    _record(settings, job, "start-standby", **base)
    try:
        return start_standby(new_spec, settings, timeout=timeout, new_stages=new_stages)
    except StreamopsError as exc:
        _record(settings, job, "standby-failed", reason=str(exc)[:2000], **base)
        raise UpgradeFailed(
            f"standby v{new_spec.version} of {job} did not come up ({exc}); "
            f"v{base['from_version']} was not stopped"
        ) from exc


def upgrade(
    settings: Settings, job: str, new_spec: JobSpec, *, allow_state_drop: bool = False,
    savepoint: str | None = None, health_timeout: float = 300.0,
    rollback_timeout: float = 300.0, warm: bool = False,
) -> UpgradeOutcome:  # fmt: skip
    """Plan → savepoint with cancel → start ``new_spec`` from it → healthy, or roll back.

    ``warm``: the new version's driver is started as a warm standby (session up, stages built
    and validated) before the old one is stopped, so the gap is only the savepoint and the
    restore. A standby that fails to come up aborts the upgrade with the old version untouched.
    """
    plan = plan_upgrade(settings, job, new_spec, allow_state_drop=allow_state_drop)
    if not plan.allowed:
        raise UpgradeRefused(f"upgrade of {job} refused, nothing was stopped: {plan.refusal}")
    old_spec = current_spec(settings, job)
    name = savepoint or default_savepoint_name(job, old_spec.version, new_spec.version)
    base = {"savepoint": name, "from_version": old_spec.version, "to_version": new_spec.version}
    new_stages = [s.stage for s in plan.stages if s.action.value != "DROPPED"]
    ready: Standby | None = None
    if warm:
        fresh = [s.stage for s in plan.stages if s.action is StageAction.NEW]
        ready = start_warm_standby(settings, new_spec, fresh, base, timeout=health_timeout)
    _record(settings, job, "savepoint-with-cancel", **base)
    registry = JobRegistry(settings)
    old_driver = registry.view(job).driver_id
    # the old driver gives up its lease with its answer, then (handover) idles until the new
    # version runs, so its shutdown does not compete with the new version's first batches;
    # without room for the new version beside it, it shuts down at once
    handover = handover_fits(registry, new_spec, ready)
    t0 = time.monotonic()
    try:
        # either way the new version is started at once (``replacing``)
        savepoint_job(settings, job, name, cancel=True, wait_stopped=False, handover=handover)
    except StreamopsError:
        if ready is not None:
            abort_standby(settings, ready)
        raise
    t1 = time.monotonic()
    _record(settings, job, "start-new-version", **base)
    driver: str | None = None
    try:
        if ready is not None:
            release_standby(settings, ready, name, new_stages)
            driver = ready.driver_id
        else:
            driver = start_from_savepoint(
                new_spec, settings, name, new_stages, wait_healthy=None, replacing=old_driver
            )
        JobRegistry(settings).wait_healthy(job, timeout=health_timeout, since_driver=driver)
        wait_driver_ended(settings, job, old_driver)
    except StreamopsError as exc:
        _record(settings, job, "rollback", reason=str(exc)[:2000], **base)
        rollback(settings, job, old_spec, name, rollback_timeout, stop=(driver, old_driver))
        _record(settings, job, "rolled-back", reason=str(exc)[:2000], **base)
        raise UpgradeFailed(
            f"job {job} v{new_spec.version} did not become healthy ({exc}); rolled back to "
            f"v{old_spec.version} from savepoint {name}"
        ) from exc
    _record(settings, job, "done", driver_id=driver, warm=warm, **base)
    return UpgradeOutcome(job, old_spec.version, new_spec.version, name, driver, plan.render(),
                          round(t1 - t0, 2), round(time.monotonic() - t1, 2))  # fmt: skip


def rollback(
    settings: Settings, job: str, old_spec: JobSpec, savepoint: str, health_timeout: float,
    *, stop: Iterable[str | None] = (),
) -> str:  # fmt: skip
    """Stop whatever runs under ``job`` (and the drivers in ``stop``: the new version's, and
    the old one's if it is still waiting to hand over) and restart ``old_spec`` from
    ``savepoint``."""
    from streamops.savepoints import get_savepoint

    registry = JobRegistry(settings)
    for driver in filter(None, stop):
        if registry.driver_live(driver):
            log.warning("rollback of %s: stopping driver %s", job, driver)
            registry.kill_driver(job, driver)
            wait_driver_ended(settings, job, driver)
    if registry.view(job).is_live:
        registry.cancel(job)
    stages = list(get_savepoint(settings.layout, savepoint).stages)
    log.warning("rolling %s back to v%s from savepoint %s", job, old_spec.version, savepoint)
    return start_from_savepoint(old_spec, settings, savepoint, stages, wait_healthy=health_timeout)
