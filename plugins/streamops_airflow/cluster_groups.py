"""Task groups shared by the cluster DAGs (``cluster_restart``, ``rolling_scale``, ...).

Each task calls one procedure of the ops library (:mod:`streamops.procedures.cluster_restart`,
:mod:`streamops.procedures.scale`), the code the CLI runs; cluster steps reach nodes only through
the node agents. The procedures record intent before each destructive step, so a retried task
resumes instead of repeating harm. Nothing here runs at import (DAG parse) time: the ops
library is imported inside the tasks. Their settings come from
:func:`~streamops_airflow.hooks.ops_settings`, as every DAG's do.
"""

from __future__ import annotations

from typing import Any

from airflow.sdk import task, task_group
from airflow.sdk.exceptions import AirflowFailException


def restart_step(step: str, **kwargs: Any) -> Any:
    """Run one step of :mod:`streamops.procedures.cluster_restart`; a failure is kept in the intent
    record (the rollback task reports it) and fails the task."""
    from streamops.exceptions import StreamopsError
    from streamops.procedures import cluster_restart
    from streamops_airflow.hooks import ops_settings

    settings = ops_settings()
    try:
        return getattr(cluster_restart, step)(settings, **kwargs)
    except StreamopsError as exc:
        cluster_restart.record_failure(settings, f"step {step} failed: {exc}")
        raise


@task
def jobs_of_restart() -> list[str]:
    """The jobs the current restart stops and restores (recorded by ``begin``)."""
    from streamops.procedures import cluster_restart
    from streamops_airflow.hooks import ops_settings

    intent = cluster_restart.load_intent(ops_settings())
    return sorted(intent.savepoints) if intent and not intent.finished else []


@task_group(group_id="savepoint_all_jobs")
def savepoint_all_jobs() -> None:
    """Savepoint every running job with cancel: one mapped task per job. (Returns nothing,
    so the call gives the group itself: ``a >> group`` reaches its first task.)"""

    @task(map_index_template="{{ task.op_kwargs['job'] }}")
    def savepoint_with_cancel(job: str) -> str:
        return str(restart_step("savepoint_jobs", jobs=[job])[job])

    savepoint_with_cancel.expand(job=jobs_of_restart())


@task_group(group_id="restore_all_jobs")
def restore_all_jobs() -> None:
    """Start every saved job from its savepoint (one mapped task per job), then wait until
    every one is healthy and report the jar release each runs with."""

    @task(map_index_template="{{ task.op_kwargs['job'] }}")
    def restore_from_savepoint(job: str) -> None:
        restart_step("restore_jobs", jobs=[job])

    @task(trigger_rule="none_failed")
    def verify_healthy(timeout: int = 300) -> dict[str, str]:
        releases = restart_step("verify_healthy", timeout=float(timeout))
        print(f"jobs healthy after the restart, with their classpath release: {releases}")
        return dict(releases)

    restore_from_savepoint.expand(job=jobs_of_restart()) >> verify_healthy()


@task(trigger_rule="one_failed", retries=0)
def roll_back_restart() -> None:
    """On a failed step: stop, switch back to the old release, start, restore every job
    from its savepoint; then fail the run with the reason."""
    from streamops.procedures import cluster_restart
    from streamops_airflow.hooks import ops_settings

    settings = ops_settings()
    intent = cluster_restart.load_intent(settings)
    if intent is None or intent.finished:
        raise AirflowFailException("the restart failed before any destructive step; nothing "
                                   "to roll back (see the failed task)")
    reason = intent.reason or f"a step failed at phase {intent.phase}"
    cluster_restart.rollback(settings, reason)
    raise AirflowFailException(
        f"cluster restart to {intent.release_to} failed ({reason}); rolled back to release "
        f"{intent.release_from or 'none'} and restored {', '.join(intent.saved) or 'no jobs'}"
    )
