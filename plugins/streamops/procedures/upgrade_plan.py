"""The upgrade's dry run: compare the running stages with the new version's
(:mod:`streamops.planner`). Nothing stops here; :mod:`streamops.procedures.upgrade_steps`
records the plan in the upgrade's intent and acts on it."""

from __future__ import annotations

import logging
import re
import time
from typing import Any

from streamops.describe_stages import describe_spec_stages
from streamops.exceptions import JobError, JobNotFound
from streamops.jobs import JobRegistry, current_spec
from streamops.planner import UpgradePlan
from streamops.settings import Settings
from streamops.spec import JobSpec

log = logging.getLogger("streamops.procedures.upgrade")


class UpgradeRefused(JobError):
    """The upgrade plan is not allowed; nothing was stopped."""


class UpgradeFailed(JobError):
    """The new version did not become healthy; the old one was restored from the savepoint."""


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
    settings: Settings, job: str, new_spec: JobSpec, *, allow_state_drop: bool = False,
    old_spec: JobSpec | None = None,
) -> UpgradePlan:  # fmt: skip
    """Dry run: compare the running stages with the new version's. Nothing stops."""
    if new_spec.name != job:
        raise UpgradeRefused(f"spec {new_spec.name} is not a version of job {job}")
    old = old_spec or current_spec(settings, job)
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
