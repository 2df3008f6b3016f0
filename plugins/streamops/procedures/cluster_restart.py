"""Graceful cluster restart that switches the classpath jar release: its two paths.

:func:`begin` records the intent and chooses the path
(:mod:`streamops.procedures.cluster_restart_intent`): ``warm`` while jobs run (the release
switched under the running daemons, each job handed over to a standby on it:
:mod:`streamops.procedures.cluster_handover`, :data:`WARM_STEPS`), ``full`` when none runs or
when asked (the whole cluster stopped and started, the daemons on the new release too).

The full path's steps, each one function (one task of the ``cluster_restart`` DAG), all
through the agents (the ``nodes`` of the operations port)::

    begin(release)      record the intent: from/to release, path, running jobs and their
                        specs by value, running workers
    savepoint_jobs      savepoint every recorded job with cancel (the first steps of
                        :mod:`streamops.procedures.savepoint_restart`, whose intent is the job's
                        own)
    stop_cluster        stop the workers, then the master
    switch_release      make the new release active on every node
    start_cluster       start the master, then the recorded workers
    restore_jobs        start every job from its savepoint
    verify_healthy      wait until every job is healthy on the new release → done
    rollback(reason)    on failure: stop, switch back, start, restore from the same savepoints
                        the specs the intent holds (a warm restart rolls back its own way)

The intent ``<state>/cluster/intents/cluster-restart.json`` (:class:`RestartIntent`, kept by
the intent store) is written before each destructive step and updated after it, so a
retried step resumes (a job already saved is not saved again, a job already restored is not
submitted twice) rather than repeats harm. :func:`restart` runs them through the step runner,
its failure policy the rollback.
"""

from __future__ import annotations

import logging
from typing import Any

from streamops.exceptions import ClusterRestartFailed, StreamopsError
from streamops.procedures import cluster_handover as handover
from streamops.procedures import savepoint_restart as procedure
from streamops.procedures.cluster_restart_intent import (
    OPERATION,
    OWNER,
    PATHS,
    STORE,
    RestartIntent,
    begin,
    current_or_last,
    load_intent,
    record_failure,
)
from streamops.procedures.cluster_restart_intent import current as _current
from streamops.procedures.cluster_restart_intent import nodes_of as _nodes
from streamops.procedures.job_lease import job_operation
from streamops.procedures.step_runner import run_steps
from streamops.spec import spec_from_dict
from streamops.timeouts import HEALTH_TIMEOUT
from streamops.world.operations import Operations, World
from streamops.world.port import operations

log = logging.getLogger("streamops.procedures.cluster_restart")

__all__ = ["OPERATION", "OWNER", "PATHS", "STORE", "WARM_STEPS", "RestartIntent", "STEPS",
           "begin", "load_intent", "record_failure", "restart", "restore_jobs", "rollback",
           "savepoint_jobs", "start_cluster", "stop_cluster", "switch_release",
           "verify_healthy"]  # fmt: skip


def savepoint_jobs(ops: Operations, jobs: list[str] | None = None) -> dict[str, str]:
    """Savepoint every recorded job (or ``jobs``) with cancel, skipping those already saved:
    the savepoint steps of the job's restart from a savepoint, which resume on a retry (a
    request already sent is waited for, never sent twice)."""
    intent = _current(ops)
    if intent.path == "warm":
        raise ClusterRestartFailed(f"the cluster restart to {intent.release_to} takes the warm "
                                   "path: its jobs are handed over, not saved and stopped")
    for job, name in intent.savepoints.items():
        if jobs is not None and job not in jobs:
            continue
        if job in intent.saved:
            log.info("job %s already saved to %s", job, name)
            continue
        STORE.save(ops, intent, "savepointing", job=job, savepoint=name)
        with job_operation(ops, job, "cluster restart: savepoint with cancel"):
            procedure.begin(ops, job, OWNER, savepoint=name, purpose=OPERATION,
                            watch_driver=False)  # fmt: skip
            run_steps(procedure.SAVEPOINT_STEPS, ops, job, OWNER, waits=procedure.WAITS)
        intent.saved.append(job)
        STORE.save(ops, intent, "saved", job=job, savepoint=name)
    return intent.savepoints


def stop_cluster(ops: Operations) -> None:
    """Stop every running worker, then the master (through their agents)."""
    intent = _current(ops)
    STORE.save(ops, intent, "stopping")
    _nodes(ops).stop_all()
    STORE.save(ops, intent, "stopped")


def switch_release(ops: Operations) -> None:
    intent = _current(ops)
    STORE.save(ops, intent, "switching")
    _nodes(ops).switch_release(intent.release_to)
    STORE.save(ops, intent, "switched")


def start_cluster(ops: Operations) -> None:
    """Start the master, then the workers that ran before the restart."""
    intent = _current(ops)
    STORE.save(ops, intent, "starting")
    _nodes(ops).start_all(intent.workers)
    STORE.save(ops, intent, "started")


def restore_jobs(ops: Operations, jobs: list[str] | None = None) -> None:
    """Submit every saved job (or ``jobs``) from its savepoint, once: a retried step skips
    the jobs already restored (the job's restart intent knows the driver it submitted)."""
    intent = _current(ops)
    STORE.save(ops, intent, "restoring")
    for job, name in intent.savepoints.items():
        if job not in intent.saved or (jobs is not None and job not in jobs):
            continue  # never stopped by this restart
        if job in intent.restored or ops.registry.view(job).is_live:
            log.info("job %s is already restored", job)
            continue
        with job_operation(ops, job, "cluster restart: restore"):
            procedure.start_from_savepoint(ops, job, OWNER)
        intent.restored.append(job)
        STORE.save(ops, intent, intent.phase, restored=job, savepoint=name)
    STORE.save(ops, intent, "restored")


def _spec_of(ops: Operations, intent: RestartIntent, job: str) -> dict[str, Any]:
    """The spec ``job`` ran before the restart, by value: the intent's, else (an intent of
    the older layout, before it held them) the job's own restart intent's."""
    if job in intent.specs:
        return intent.specs[job]
    own = procedure.load_intent(ops, job)
    if own is not None and own.owner == OWNER and own.spec:
        return own.spec
    return ops.registry.current_spec(job).model_dump(mode="json")


def _restore_again(ops: Operations, intent: RestartIntent) -> None:
    """The rollback: every saved job from the same savepoint (its restart intent is spent)."""
    for job, name in intent.savepoints.items():
        if job in intent.saved:
            spec = spec_from_dict(_spec_of(ops, intent, job), f"the spec of {job} before the "
                                  "cluster restart")  # fmt: skip
            stages = list(ops.savepoints.get(name, job).stages)
            ops.submitter.start_from_savepoint(spec, name, stages, wait_healthy=None)
            intent.restored.append(job)
            STORE.save(ops, intent, intent.phase, restored=job, savepoint=name)


def _releases(ops: Operations, intent: RestartIntent) -> dict[str, str]:
    return {job: ops.registry.view(job).status.classpath_release or "unknown"
            for job in intent.saved}  # fmt: skip


def _wait_healthy(ops: Operations, intent: RestartIntent, timeout: float) -> dict[str, str]:
    for job in intent.saved:
        ops.registry.wait_healthy(job, timeout=timeout)
    return _releases(ops, intent)


def verify_healthy(ops: Operations, timeout: float = HEALTH_TIMEOUT) -> dict[str, str]:
    """Wait until every restored job is healthy (the last step of its restart from a
    savepoint); per job, the release it reports."""
    intent = _current(ops)
    for job in intent.saved:
        procedure.verify(ops, job, OWNER, timeout=timeout)
    releases = _releases(ops, intent)
    STORE.save(ops, intent, "done", releases=releases)
    log.info("cluster restart to %s done; jobs healthy with releases %s", intent.release_to,
             releases or "(no jobs)")
    return releases


def rollback(ops: Operations, reason: str, timeout: float = HEALTH_TIMEOUT) -> None:
    """Undo an unfinished restart: cancel what runs of the jobs, stop the cluster, switch
    back to the old release, start, restore every job from the same savepoint with the spec
    the intent holds."""
    intent = _current(ops)
    if intent.path == "warm":
        handover.roll_back(ops, reason, timeout)
        return
    intent.reason = reason
    STORE.save(ops, intent, "rolling-back", reason=reason[:2000])
    for job in intent.saved:
        if ops.registry.view(job).is_live:
            try:
                ops.registry.cancel(job)
            except StreamopsError as exc:
                log.warning("could not cancel %s during rollback: %s", job, exc)
    if intent.reached("stopping"):
        nodes = _nodes(ops)
        nodes.stop_all()
        if intent.release_from:
            nodes.switch_release(intent.release_from)
        nodes.start_all(intent.workers)
    else:
        log.info("the cluster was not stopped; restoring the saved jobs on it as it is")
    intent.restored = []
    _restore_again(ops, intent)
    _wait_healthy(ops, intent, timeout)
    STORE.save(ops, intent, "rolled-back", reason=reason[:2000])


STEPS = (savepoint_jobs, stop_cluster, switch_release, start_cluster, restore_jobs,
         verify_healthy)  # fmt: skip
"""The full path."""
WARM_STEPS = (switch_release, handover.hand_over_jobs, handover.verify_released)
"""The warm path (:mod:`streamops.procedures.cluster_handover`)."""


def restart(world: World, release: str, timeout: float = HEALTH_TIMEOUT,
            owner: str = "cli", path: str = "auto", *,
            now: bool = False) -> RestartIntent:  # fmt: skip
    """The whole restart (CLI) by ``path`` (``auto``, ``warm``, ``full``: see
    :func:`~streamops.procedures.cluster_restart_intent.begin`); on failure roll back and
    raise ``ClusterRestartFailed``."""
    ops = operations(world)
    intent = begin(ops, release, owner, path, now=now)

    def roll_back(exc: StreamopsError) -> None:
        reason = f"{type(exc).__name__}: {exc}"
        log.error("cluster restart to %s failed: %s; rolling back", release, reason)
        rollback(ops, reason, timeout)
        raise ClusterRestartFailed(
            f"cluster restart to {release} ({intent.path} path) failed ({reason}); rolled "
            f"back to release {current_or_last(ops).release_from or 'none'} and the jobs run "
            "again"
        ) from exc

    run_steps(WARM_STEPS if intent.path == "warm" else STEPS, ops, on_failure=roll_back)
    return current_or_last(ops)
