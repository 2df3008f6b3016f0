"""The upgrade's dry run: compare the running stages with the new version's
(:mod:`streamops.planner`). Nothing stops here; :mod:`streamops.procedures.upgrade_steps`
records the plan in the upgrade's intent and acts on it."""

from __future__ import annotations

import logging
import re
import time
from typing import Any

from streamops.exceptions import JobNotFound, UpgradeFailed, UpgradeRefused
from streamops.planner import UpgradePlan
from streamops.spec import JobSpec
from streamops.world.operations import World
from streamops.world.port import operations

log = logging.getLogger("streamops.procedures.upgrade")


__all__ = ["UpgradeFailed", "UpgradeRefused", "default_savepoint_name", "plan_upgrade",
           "running_stages"]  # fmt: skip


def running_stages(world: World, job: str) -> dict[str, dict[str, Any]]:
    """Stage descriptors the running driver published in its status."""
    view = operations(world).registry.view(job)
    if not view.is_live:
        raise JobNotFound(f"job {job} is not running (state {view.state}); nothing to upgrade")
    return {
        name: info.descriptor or {"stateful": bool(info.stateful), "operators": []}
        for name, info in view.stages.items()
    }


def plan_upgrade(
    world: World, job: str, new_spec: JobSpec, *, allow_state_drop: bool = False,
    old_spec: JobSpec | None = None,
) -> UpgradePlan:  # fmt: skip
    """Dry run: compare the running stages with the new version's. Nothing stops."""
    if new_spec.name != job:
        raise UpgradeRefused(f"spec {new_spec.name} is not a version of job {job}")
    ops = operations(world)
    old = old_spec or ops.registry.current_spec(job)
    running = running_stages(ops, job)
    # the spec that runs describes as it runs (a handover to the same spec: a cluster restart)
    same = new_spec.model_dump(mode="json") == old.model_dump(mode="json")
    plan = UpgradePlan.build(
        job, running, running if same else ops.submitter.describe_stages(new_spec),
        from_version=old.version, to_version=new_spec.version,
        allow_state_drop=allow_state_drop,
    )  # fmt: skip
    log.info("upgrade plan for %s:\n%s", job, plan.render())
    return plan


def default_savepoint_name(job: str, old: str, new: str) -> str:
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    raw = f"{job}-v{old}-to-v{new}-{stamp}".lower()
    return re.sub(r"[^a-z0-9._-]", "-", raw)[:63]
