"""Savepoint-and-upgrade: Jet's ``save-snapshot --cancel`` then ``submit -s``, for Spark.

Observe → decide → act → record. The plan (:mod:`streamops.planner`) is computed and printed
before anything stops; a refused plan leaves the running job untouched. Then: savepoint
with cancel → start the new version from it → wait until healthy. If the new version does
not become healthy, the old version is restarted from the same savepoint and the procedure
fails with the reason.

:func:`upgrade` (the CLI's) runs the steps of :mod:`streamops.procedures.upgrade_steps` in a loop,
the ones the ``savepoint_and_upgrade`` DAG runs one task each; their intent record
``jobs/<job>/upgrade.json`` shows where an upgrade stopped, and lets a re-run resume it.
"""

from __future__ import annotations

from dataclasses import dataclass

from streamops.exceptions import StreamopsError
from streamops.procedures import upgrade_steps as steps
from streamops.procedures.upgrade_plan import (
    UpgradeFailed,
    UpgradeRefused,
    default_savepoint_name,
    plan_upgrade,
    running_stages,
)
from streamops.settings import Settings
from streamops.spec import JobSpec

__all__ = ["UpgradeFailed", "UpgradeOutcome", "UpgradeRefused", "default_savepoint_name",
           "plan_upgrade", "running_stages", "upgrade"]  # fmt: skip

CLI_OWNER = "cli"


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


def upgrade(
    settings: Settings, job: str, new_spec: JobSpec, *, allow_state_drop: bool = False,
    savepoint: str | None = None, health_timeout: float = 300.0,
    rollback_timeout: float = 300.0, warm: bool = False, standby: str | None = None,
    owner: str = CLI_OWNER,
) -> UpgradeOutcome:  # fmt: skip
    """Plan → (warm standby) → savepoint with cancel → start ``new_spec`` from it → healthy,
    or roll back and raise :class:`UpgradeFailed`.

    ``standby`` (``auto``, ``warm``, ``cold``; else ``warm`` picks): with a warm standby the
    new version's driver is up (session, stages built and validated) before the old one is
    stopped, so the gap is only the savepoint and the restore. A standby that fails to come
    up ends the upgrade with the old version untouched. A re-run with the same spec resumes
    an unfinished upgrade of the same ``owner``.
    """
    mode = standby or ("warm" if warm else "cold")
    intent = steps.plan(settings, job, owner, new_spec, savepoint=savepoint,
                        allow_state_drop=allow_state_drop, standby=mode)  # fmt: skip
    waits = {"start_standby": health_timeout, "savepoint_answered": steps.SAVEPOINT_TIMEOUT,
             "verify": health_timeout}  # fmt: skip
    try:
        for step in steps.STEPS:
            name = step.__name__
            step(settings, job, owner, **({"timeout": waits[name]} if name in waits else {}))
    except StreamopsError as exc:
        undo = steps.rollback(settings, job, owner, str(exc), timeout=rollback_timeout)
        if undo.rolled_back:
            raise UpgradeFailed(undo.message) from exc
        steps.abort_standby(settings, job, owner)  # the old version runs on
        raise
    intent = steps.load_intent(settings, job) or intent
    times = intent.times
    return UpgradeOutcome(
        job, intent.from_version, intent.to_version, intent.savepoint, str(intent.new_driver),
        intent.plan,
        round(times["savepoint_answered"] - times["request_savepoint"], 2),
        round(times["finish"] - times["savepoint_answered"], 2),
    )  # fmt: skip
