"""Graceful full-cluster restart that switches the classpath jar release.

Steps, each one function (one task of the ``cluster_restart`` DAG), all through the agents
(the ``nodes`` of the operations port)::

    begin(release)      record the intent: from/to release, running jobs and their specs by
                        value, running workers
    savepoint_jobs      savepoint every recorded job with cancel (the first steps of
                        :mod:`streamops.procedures.savepoint_restart`, whose intent is the job's
                        own)
    stop_cluster        stop the workers, then the master
    switch_release      make the new release active on every node
    start_cluster       start the master, then the recorded workers
    restore_jobs        start every job from its savepoint
    verify_healthy      wait until every job is healthy on the new release → done
    rollback(reason)    on failure: stop, switch back, start, restore from the same savepoints
                        the specs the intent holds

The intent ``<state>/cluster/intents/cluster-restart.json`` (:class:`RestartIntent`, kept by
the intent store) is written before each destructive step and updated after it, so a
retried step resumes (a job already saved is not saved again, a job already restored is not
submitted twice) rather than repeats harm. :func:`restart` runs them through the step runner,
its failure policy the rollback.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any

from streamops.cluster.releases import ReleaseStore
from streamops.exceptions import ClusterRestartFailed, StreamopsError
from streamops.procedures import savepoint_restart as procedure
from streamops.procedures.cluster_nodes import switch_release_on_nodes
from streamops.procedures.intent_store import IntentStore, StepRecord
from streamops.procedures.operations import Nodes, Operations, World
from streamops.procedures.step_runner import run_steps
from streamops.procedures.timeouts import HEALTH_TIMEOUT
from streamops.procedures.world import operations
from streamops.spec import spec_from_dict

log = logging.getLogger("streamops.procedures.cluster_restart")

__all__ = ["OPERATION", "OWNER", "RestartIntent", "STEPS", "begin", "load_intent",
           "record_failure", "restart", "restore_jobs", "rollback", "savepoint_jobs",
           "start_cluster", "stop_cluster", "switch_release", "switch_release_on_nodes",
           "verify_healthy"]  # fmt: skip

OPERATION = "cluster-restart"
OWNER = "cluster-restart"  # of the jobs' own restart intents (jobs/<job>/restart.json)


@dataclass
class RestartIntent(StepRecord):
    """What a restart is doing; persisted after every step."""

    FINISHED = ("done", "rolled-back")

    release_from: str | None
    release_to: str
    workers: list[str]
    savepoints: dict[str, str]  # job -> savepoint name
    specs: dict[str, dict[str, Any]] = field(default_factory=dict)  # job -> its spec, by value
    saved: list[str] = field(default_factory=list)
    restored: list[str] = field(default_factory=list)
    started_at: float = field(default_factory=time.time)
    steps: list[dict[str, Any]] = field(default_factory=list)
    reason: str | None = None
    owner: str = "cli"  # ``cli`` or ``airflow:<dag>/<run>``: who runs (and resumes) it


STORE = IntentStore(RestartIntent, OPERATION, title="cluster restart", error=ClusterRestartFailed,
                    cluster=True, history=True,
                    describe=lambda i: f"cluster restart to {i.release_to}")  # fmt: skip


def load_intent(world: World) -> RestartIntent | None:
    return STORE.load(world)


def _current(ops: Operations) -> RestartIntent:
    intent = load_intent(ops)
    if intent is None or intent.finished:
        raise ClusterRestartFailed("no cluster restart in progress; begin one first "
                                   "(`streamops cluster restart --release R`)")
    return intent


def _nodes(ops: Operations) -> Nodes:
    if ops.nodes is None:
        raise ClusterRestartFailed("this operations port reaches no node agents")
    return ops.nodes


def begin(ops: Operations, release: str, owner: str = "cli") -> RestartIntent:
    """Record the intent of restarting onto ``release``; resume an unfinished one to it
    (``owner``, the CLI or a DAG run, is who runs it from then on)."""
    store = ReleaseStore(ops.settings)
    store.path(release)  # UnknownRelease naming the known ones
    intent = load_intent(ops)
    if intent is not None and not intent.finished:
        if intent.release_to != release:
            raise ClusterRestartFailed(
                f"a cluster restart to {intent.release_to} is in progress (phase "
                f"{intent.phase}); resume it with that release or roll it back first")
        log.info("resuming the cluster restart to %s at phase %s", release, intent.phase)
        if intent.owner != owner:
            intent.owner = owner
            STORE.save(ops, intent, intent.phase, owner=owner)
        return intent
    jobs = sorted(v.name for v in ops.registry.list() if v.is_live)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    intent = RestartIntent(
        release_from=store.active(), release_to=release, workers=_nodes(ops).running_workers(),
        savepoints={job: f"{job}-restart-{stamp}" for job in jobs},
        specs={job: ops.registry.current_spec(job).model_dump(mode="json") for job in jobs},
        owner=owner)
    STORE.save(ops, intent, "begun", jobs=jobs, workers=intent.workers)
    log.info("cluster restart %s → %s: jobs %s, workers %s", intent.release_from, release,
             ", ".join(jobs) or "none", ", ".join(intent.workers))
    return intent


def savepoint_jobs(ops: Operations, jobs: list[str] | None = None) -> dict[str, str]:
    """Savepoint every recorded job (or ``jobs``) with cancel, skipping those already saved:
    the savepoint steps of the job's restart from a savepoint, which resume on a retry (a
    request already sent is waited for, never sent twice)."""
    intent = _current(ops)
    for job, name in intent.savepoints.items():
        if jobs is not None and job not in jobs:
            continue
        if job in intent.saved:
            log.info("job %s already saved to %s", job, name)
            continue
        STORE.save(ops, intent, "savepointing", job=job, savepoint=name)
        procedure.begin(ops, job, OWNER, savepoint=name, purpose=OPERATION, watch_driver=False)
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


def record_failure(world: World, reason: str) -> None:
    """Keep why a step failed in the intent (the rollback reports it)."""
    intent = load_intent(world)
    if intent is not None and not intent.finished:
        intent.reason = reason
        STORE.save(world, intent, intent.phase, failure=reason[:2000])


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
    intent.reason = reason
    STORE.save(ops, intent, "rolling-back", reason=reason[:2000])
    for job in intent.saved:
        if ops.registry.view(job).is_live:
            try:
                ops.registry.cancel(job)
            except StreamopsError as exc:
                log.warning("could not cancel %s during rollback: %s", job, exc)
    if any(step["phase"] == "stopping" for step in intent.steps):
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


def restart(world: World, release: str, timeout: float = HEALTH_TIMEOUT,
            owner: str = "cli") -> RestartIntent:  # fmt: skip
    """The whole restart (CLI); on failure roll back and raise ``ClusterRestartFailed``."""
    ops = operations(world)
    begin(ops, release, owner)

    def roll_back(exc: StreamopsError) -> None:
        reason = f"{type(exc).__name__}: {exc}"
        log.error("cluster restart to %s failed: %s; rolling back", release, reason)
        rollback(ops, reason, timeout)
        raise ClusterRestartFailed(
            f"cluster restart to {release} failed ({reason}); rolled back to release "
            f"{_current_or_last(ops).release_from or 'none'} and restored the jobs"
        ) from exc

    run_steps(STEPS, ops, on_failure=roll_back)
    return _current_or_last(ops)


def _current_or_last(ops: Operations) -> RestartIntent:
    intent = load_intent(ops)
    if intent is None:
        raise ClusterRestartFailed("the cluster restart intent record disappeared")
    return intent
