"""The procedures' public entry points, in one place (``streamops cancel`` imports them from
here; the other verbs, the DAGs and the reconcile loop import each from its own module):
each takes the settings or an operations port (:data:`~streamops.world.operations.World`)
and runs its procedure whole, through the step runner, resuming an unfinished one of the
same owner."""

from __future__ import annotations

from streamops.procedures.cluster_restart import restart as restart_cluster
from streamops.procedures.deploy import start_job
from streamops.procedures.job_lease import job_operation
from streamops.procedures.restart import restart_job
from streamops.procedures.savepoint_taking import savepoint_job
from streamops.procedures.scale import scale
from streamops.procedures.upgrade import upgrade
from streamops.world.operations import World
from streamops.world.port import operations
from streamops.world.submit import submit_job

__all__ = ["cancel_job", "restart_cluster", "restart_job", "savepoint_job", "scale",
           "start_job", "submit_job", "upgrade"]  # fmt: skip


def cancel_job(world: World, job: str) -> list[str]:
    """Stop ``job`` now: kill every driver of it the master knows (no savepoint; its
    checkpoints stay); the drivers killed (``streamops cancel``)."""
    ops = operations(world)
    with job_operation(ops, job, "cancel"):
        return ops.registry.cancel(job)
