"""Task groups shared by the cluster DAGs (``cluster_restart``, ``rolling_scale``); the
restart's two paths (full: ``savepoint_all_jobs`` … ``restore_all_jobs``; warm:
``hand_over_all_jobs``).

Each task runs one step function of the ops library (:mod:`streamops.procedures.cluster_restart`,
:mod:`streamops.procedures.scale`), the steps the CLI runs through the step runner; cluster
steps reach nodes only through the node agents (the ``nodes`` of the operations port). The
procedures record intent before each destructive step, so a retried task resumes instead of
repeating harm. A failed step of the cluster restart is kept in its intent (the rollback task
reports it); of a scale, in the scale's intent (health shows it).
"""

from __future__ import annotations

from typing import Any

from airflow.sdk import task, task_group
from airflow.sdk.exceptions import AirflowFailException

from streamops.exceptions import StreamopsError
from streamops.procedures import cluster_handover, cluster_restart
from streamops.timeouts import HEALTH_TIMEOUT
from streamops_airflow.procedure_tasks import Step, run_step


def restart_step(step: Step, *args: Any, **kwargs: Any) -> Any:
    """Run ``step`` (a function of :mod:`streamops.procedures.cluster_restart`); a failure is
    kept in the intent record (the rollback task reports it) and fails the task."""
    try:
        return run_step(step, *args, **kwargs)
    except StreamopsError as exc:
        run_step(cluster_restart.record_failure, f"step {step.__name__} failed: {exc}")
        raise


@task
def jobs_of_restart() -> list[str]:
    """The jobs the current restart stops and restores (recorded by ``begin``)."""
    intent = run_step(cluster_restart.load_intent)
    return sorted(intent.savepoints) if intent and not intent.finished else []


@task_group(group_id="savepoint_all_jobs")
def savepoint_all_jobs() -> None:
    """Savepoint every running job with cancel: one mapped task per job. (Returns nothing,
    so the call gives the group itself: ``a >> group`` reaches its first task.)"""

    @task(map_index_template="{{ task.op_kwargs['job'] }}")
    def savepoint_with_cancel(job: str) -> str:
        return str(restart_step(cluster_restart.savepoint_jobs, jobs=[job])[job])

    savepoint_with_cancel.expand(job=jobs_of_restart())


@task_group(group_id="restore_all_jobs")
def restore_all_jobs() -> None:
    """Start every saved job from its savepoint (one mapped task per job), then wait until
    every one is healthy and report the jar release each runs with."""

    @task(map_index_template="{{ task.op_kwargs['job'] }}")
    def restore_from_savepoint(job: str) -> None:
        restart_step(cluster_restart.restore_jobs, jobs=[job])

    # runs after the restores, or with none (no job: nothing mapped, skipped) once the jobs
    # were listed; never when the full path was not taken (all its upstream skipped)
    @task(trigger_rule="none_failed_min_one_success")
    def verify_healthy(timeout: int = int(HEALTH_TIMEOUT)) -> dict[str, str]:
        releases = restart_step(cluster_restart.verify_healthy, timeout=float(timeout))
        print(f"jobs healthy after the restart, with their classpath release: {releases}")
        return dict(releases)

    jobs = jobs_of_restart()
    verified = verify_healthy()
    restore_from_savepoint.expand(job=jobs) >> verified
    jobs >> verified


@task_group(group_id="hand_over_all_jobs")
def hand_over_all_jobs() -> None:
    """The warm path: the new release active under the running daemons, then every job
    handed over to a standby on it (one mapped task per job), then every job healthy and
    reporting the new release."""

    @task
    def switch_release_live() -> None:
        restart_step(cluster_restart.switch_release)

    @task(map_index_template="{{ task.op_kwargs['job'] }}")
    def hand_over(job: str) -> None:
        restart_step(cluster_handover.hand_over_jobs, jobs=[job])

    @task(trigger_rule="none_failed_min_one_success")
    def verify_released(timeout: int = int(HEALTH_TIMEOUT)) -> dict[str, str]:
        releases = restart_step(cluster_handover.verify_released, timeout=float(timeout))
        print(f"jobs healthy after their handover, with their classpath release: {releases}")
        return dict(releases)

    jobs = jobs_of_restart()
    verified = verify_released()
    switch_release_live() >> jobs  # the jobs to hand over, once the release is switched
    hand_over.expand(job=jobs) >> verified
    jobs >> verified


@task(trigger_rule="one_failed", retries=0)
def roll_back_restart() -> None:
    """On a failed step: the full path stops, switches back to the old release, starts and
    restores every job from its savepoint; the warm path switches back and hands the jobs
    over again; then the run fails with the reason."""
    intent = run_step(cluster_restart.load_intent)
    if intent is None or intent.finished:
        raise AirflowFailException("the restart failed before any destructive step; nothing "
                                   "to roll back (see the failed task)")
    reason = intent.reason or f"a step failed at phase {intent.phase}"
    run_step(cluster_restart.rollback, reason)
    raise AirflowFailException(
        f"cluster restart to {intent.release_to} failed ({reason}); rolled back to release "
        f"{intent.release_from or 'none'} ({intent.path} path); jobs running again: "
        f"{', '.join(sorted(intent.savepoints)) or 'none'}"
    )
