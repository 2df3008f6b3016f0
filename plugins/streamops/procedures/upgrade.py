"""Savepoint-and-upgrade: Jet's ``save-snapshot --cancel`` then ``submit -s``, for Spark.

Observe → decide → act → record. The plan (:mod:`streamops.planner`) is computed and printed
before anything stops; a refused plan leaves the running job untouched. Then: savepoint
with cancel → start the new version from it → wait until healthy. If the new version does
not become healthy, the old version is restarted from the same savepoint and the procedure
fails with the reason.

:func:`upgrade` (the CLI's) runs the steps of :mod:`streamops.procedures.upgrade_steps` through
the step runner, the ones the ``savepoint_and_upgrade`` DAG runs one task each; their intent
record ``jobs/<job>/upgrade.json`` shows where an upgrade stopped, and lets a re-run resume it.
"""

from __future__ import annotations

from dataclasses import dataclass

from streamops.exceptions import StreamopsError, UpgradeFailed, UpgradeRefused
from streamops.procedures import upgrade_steps as steps
from streamops.procedures.job_lease import job_operation
from streamops.procedures.step_runner import run_steps
from streamops.procedures.upgrade_plan import default_savepoint_name, plan_upgrade, running_stages
from streamops.spec import JobSpec
from streamops.timeouts import HEALTH_TIMEOUT, SAVEPOINT_TIMEOUT
from streamops.world.operations import Operations, World
from streamops.world.port import operations

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
    world: World, job: str, new_spec: JobSpec, *, allow_state_drop: bool = False,
    savepoint: str | None = None, health_timeout: float = HEALTH_TIMEOUT,
    rollback_timeout: float = HEALTH_TIMEOUT, warm: bool = False, standby: str | None = None,
    owner: str = CLI_OWNER, now: bool = False,
) -> UpgradeOutcome:  # fmt: skip
    """Plan → (warm standby) → savepoint with cancel → start ``new_spec`` from it → healthy,
    or roll back and raise :class:`UpgradeFailed`.

    ``standby`` (``auto``, ``warm``, ``cold``; else ``warm`` picks): with a warm standby the
    new version's driver is up (session, stages built and validated) before the old one is
    stopped, so the gap is only the savepoint and the restore. A standby that fails to come
    up ends the upgrade with the old version untouched. A re-run with the same spec resumes
    an unfinished upgrade of the same ``owner``. A job with a ``latency_slo`` waits for
    its backlog first, or is refused (``now``: it goes at once; :mod:`.backlog_gate`).
    """
    ops = operations(world)
    with job_operation(ops, job, f"upgrade to v{new_spec.version}"):
        return _upgrade(ops, job, new_spec, allow_state_drop=allow_state_drop,
                        savepoint=savepoint, health_timeout=health_timeout,
                        rollback_timeout=rollback_timeout, mode=standby or
                        ("warm" if warm else "cold"), owner=owner, now=now)  # fmt: skip


def _upgrade(
    ops: Operations, job: str, new_spec: JobSpec, *, allow_state_drop: bool, savepoint: str | None,
    health_timeout: float, rollback_timeout: float, mode: str, owner: str, now: bool,
) -> UpgradeOutcome:  # fmt: skip
    """The upgrade's steps, its operation lease held."""
    intent = steps.plan(ops, job, owner, new_spec, savepoint=savepoint,
                        allow_state_drop=allow_state_drop, standby=mode, now=now)  # fmt: skip

    def undo(exc: StreamopsError) -> None:
        """The failure policy: roll back what the upgrade stopped, else abort its standby
        (the old version runs on) and let the error through."""
        back = steps.rollback(ops, job, owner, str(exc), timeout=rollback_timeout)
        if back.rolled_back:
            raise UpgradeFailed(back.message) from exc
        steps.abort_standby(ops, job, owner)

    waits = {"start_standby": health_timeout, "savepoint_answered": SAVEPOINT_TIMEOUT,
             "verify": health_timeout}  # fmt: skip
    run_steps(steps.STEPS, ops, job, owner, waits=waits, on_failure=undo)
    intent = steps.load_intent(ops, job) or intent
    times = intent.times
    return UpgradeOutcome(
        job, intent.from_version, intent.to_version, intent.savepoint, str(intent.new_driver),
        intent.plan,
        round(times["savepoint_answered"] - times["request_savepoint"], 2),
        round(times["finish"] - times["savepoint_answered"], 2),
    )  # fmt: skip
