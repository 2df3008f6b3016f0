"""Graceful full-cluster restart that switches the classpath jar release.

Steps, each one function (one task of the ``cluster_restart`` DAG), all through the agents::

    begin(release)      record the intent: from/to release, running jobs, running workers
    savepoint_jobs      savepoint every recorded job with cancel (the first steps of
                        :mod:`streamops.procedures.savepoint_restart`, whose intent is the job's
                        own) stop_cluster        stop the workers, then the master
    switch_release      make the new release active on every node
    start_cluster       start the master, then the recorded workers
    restore_jobs        start every job (its spec when saved) from its savepoint
    verify_healthy      wait until every job is healthy on the new release → done
    rollback(reason)    on failure: stop, switch back, start, restore from the same savepoints

The intent record ``<state>/cluster/intents/cluster-restart.json`` is written before each
destructive step and updated after it, so a retried step resumes (a job already saved is not
saved again, a job already restored is not submitted twice) rather than repeats harm.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from streamops.agent.registry import Agents
from streamops.cluster.client import MasterClient
from streamops.cluster.daemons import MASTER_NAME
from streamops.cluster.node import wait_for
from streamops.cluster.releases import ReleaseStore
from streamops.exceptions import ClusterRestartFailed, StreamopsError
from streamops.jobs import JobRegistry, current_spec
from streamops.procedures import savepoint_restart as procedure
from streamops.procedures.restore import start_from_savepoint
from streamops.procedures.scale import running_workers
from streamops.settings import Settings
from streamops.state.layout import read_json, write_json_atomic
from streamops.state.savepoints.catalogue import get_savepoint

log = logging.getLogger("streamops.procedures.cluster_restart")

OPERATION = "cluster-restart"
OWNER = "cluster-restart"  # of the jobs' own restart intents (jobs/<job>/restart.json)
FINISHED = ("done", "rolled-back")


@dataclass
class RestartIntent:
    """What a restart is doing; persisted after every step."""

    release_from: str | None
    release_to: str
    workers: list[str]
    savepoints: dict[str, str]  # job -> savepoint name
    phase: str = "begun"
    saved: list[str] = field(default_factory=list)
    restored: list[str] = field(default_factory=list)
    started_at: float = field(default_factory=time.time)
    steps: list[dict[str, Any]] = field(default_factory=list)
    reason: str | None = None
    owner: str = "cli"  # ``cli`` or ``airflow:<dag>/<run>``: who runs (and resumes) it

    @property
    def finished(self) -> bool:
        return self.phase in FINISHED


def load_intent(settings: Settings) -> RestartIntent | None:
    data = read_json(settings.layout.intent_file(OPERATION))
    names = {f.name for f in fields(RestartIntent)}
    return RestartIntent(**{k: v for k, v in data.items() if k in names}) if data else None


def _save(settings: Settings, intent: RestartIntent, phase: str, **detail: Any) -> None:
    intent.phase = phase
    intent.steps.append({"phase": phase, "at": time.time(), **detail})
    write_json_atomic(settings.layout.intent_file(OPERATION), asdict(intent))
    log.info("cluster restart to %s: %s", intent.release_to, phase)


def _current(settings: Settings) -> RestartIntent:
    intent = load_intent(settings)
    if intent is None or intent.finished:
        raise ClusterRestartFailed("no cluster restart in progress; begin one first "
                                   "(`streamops cluster restart --release R`)")
    return intent


def begin(settings: Settings, release: str, owner: str = "cli") -> RestartIntent:
    """Record the intent of restarting onto ``release``; resume an unfinished one to it
    (``owner``, the CLI or a DAG run, is who runs it from then on)."""
    store = ReleaseStore(settings)
    store.path(release)  # UnknownRelease naming the known ones
    intent = load_intent(settings)
    if intent is not None and not intent.finished:
        if intent.release_to != release:
            raise ClusterRestartFailed(
                f"a cluster restart to {intent.release_to} is in progress (phase "
                f"{intent.phase}); resume it with that release or roll it back first")
        log.info("resuming the cluster restart to %s at phase %s", release, intent.phase)
        if intent.owner != owner:
            intent.owner = owner
            _save(settings, intent, intent.phase, owner=owner)
        return intent
    agents = Agents(settings)
    jobs = sorted(v.name for v in JobRegistry(settings).list() if v.is_live)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    intent = RestartIntent(
        release_from=store.active(), release_to=release, workers=running_workers(agents),
        savepoints={job: f"{job}-restart-{stamp}" for job in jobs}, owner=owner)
    _save(settings, intent, "begun", jobs=jobs, workers=intent.workers)
    log.info("cluster restart %s → %s: jobs %s, workers %s", intent.release_from, release,
             ", ".join(jobs) or "none", ", ".join(intent.workers))
    return intent


def savepoint_jobs(settings: Settings, jobs: list[str] | None = None) -> dict[str, str]:
    """Savepoint every recorded job (or ``jobs``) with cancel, skipping those already saved:
    the savepoint steps of the job's restart from a savepoint, which resume on a retry (a
    request already sent is waited for, never sent twice)."""
    intent = _current(settings)
    for job, name in intent.savepoints.items():
        if jobs is not None and job not in jobs:
            continue
        if job in intent.saved:
            log.info("job %s already saved to %s", job, name)
            continue
        _save(settings, intent, "savepointing", job=job, savepoint=name)
        procedure.begin(settings, job, OWNER, savepoint=name, purpose=OPERATION,
                        watch_driver=False)  # fmt: skip
        procedure.run_steps(settings, job, OWNER, procedure.SAVEPOINT_STEPS)
        intent.saved.append(job)
        _save(settings, intent, "saved", job=job, savepoint=name)
    return intent.savepoints


def stop_cluster(settings: Settings) -> None:
    """Stop every running worker, then the master (through their agents)."""
    intent = _current(settings)
    _save(settings, intent, "stopping")
    _stop_all(Agents(settings))
    _save(settings, intent, "stopped")


def _stop_all(agents: Agents) -> None:
    for node in reversed(running_workers(agents)):
        agents.client(node).stop(node)
    agents.master().stop(MASTER_NAME)


def switch_release_on_nodes(agents: Agents, release: str) -> None:
    """Switch the active jar release on every node that has an agent."""
    ReleaseStore(agents.settings).path(release)  # UnknownRelease naming the known ones
    nodes = list(agents.records())
    if not nodes:
        raise ClusterRestartFailed("no node agent is registered; start the cluster first")
    for node in nodes:
        agents.client(node).switch_release(node, release)
    log.info("jar release %s active on %s", release, ", ".join(nodes))


def switch_release(settings: Settings) -> None:
    intent = _current(settings)
    _save(settings, intent, "switching")
    switch_release_on_nodes(Agents(settings), intent.release_to)
    _save(settings, intent, "switched")


def _start_all(settings: Settings, agents: Agents, workers: list[str]) -> None:
    agents.master().start(MASTER_NAME)
    for node in workers:
        agents.client(node).start(node)
    client = MasterClient(settings)
    log.info("waiting for the master to leave recovery (submissions need status ALIVE)")
    wait_for(lambda: True if client.state().get("status") == "ALIVE" else None, 180.0,
             lambda: f"the master is still {client.state().get('status')} 180s after start")


def start_cluster(settings: Settings) -> None:
    """Start the master, then the workers that ran before the restart."""
    intent = _current(settings)
    _save(settings, intent, "starting")
    _start_all(settings, Agents(settings), intent.workers)
    _save(settings, intent, "started")


def restore_jobs(settings: Settings, jobs: list[str] | None = None) -> None:
    """Submit every saved job (or ``jobs``) from its savepoint, once: a retried step skips
    the jobs already restored (the job's restart intent knows the driver it submitted)."""
    intent = _current(settings)
    _save(settings, intent, "restoring")
    registry = JobRegistry(settings)
    for job, name in intent.savepoints.items():
        if job not in intent.saved or (jobs is not None and job not in jobs):
            continue  # never stopped by this restart
        if job in intent.restored or registry.view(job).is_live:
            log.info("job %s is already restored", job)
            continue
        procedure.start_from_savepoint(settings, job, OWNER)
        intent.restored.append(job)
        _save(settings, intent, intent.phase, restored=job, savepoint=name)
    _save(settings, intent, "restored")


def _restore_again(settings: Settings, intent: RestartIntent) -> None:
    """The rollback: every saved job from the same savepoint (its restart intent is spent)."""
    for job, name in intent.savepoints.items():
        if job in intent.saved:
            stages = list(get_savepoint(settings.layout, name, job=job).stages)
            start_from_savepoint(current_spec(settings, job), settings, name, stages,
                                 wait_healthy=None)  # fmt: skip
            intent.restored.append(job)
            _save(settings, intent, intent.phase, restored=job, savepoint=name)


def record_failure(settings: Settings, reason: str) -> None:
    """Keep why a step failed in the intent (the rollback reports it)."""
    intent = load_intent(settings)
    if intent is not None and not intent.finished:
        intent.reason = reason
        _save(settings, intent, intent.phase, failure=reason[:2000])


def _releases(settings: Settings, intent: RestartIntent) -> dict[str, str]:
    registry = JobRegistry(settings)
    return {job: str(registry.view(job).status.get("classpath_release", "unknown"))
            for job in intent.saved}  # fmt: skip


def _wait_healthy(settings: Settings, intent: RestartIntent, timeout: float) -> dict[str, str]:
    registry = JobRegistry(settings)
    for job in intent.saved:
        registry.wait_healthy(job, timeout=timeout)
    return _releases(settings, intent)


def verify_healthy(settings: Settings, timeout: float = 300.0) -> dict[str, str]:
    """Wait until every restored job is healthy (the last step of its restart from a
    savepoint); per job, the release it reports."""
    intent = _current(settings)
    for job in intent.saved:
        procedure.verify(settings, job, OWNER, timeout=timeout)
    releases = _releases(settings, intent)
    _save(settings, intent, "done", releases=releases)
    log.info("cluster restart to %s done; jobs healthy with releases %s", intent.release_to,
             releases or "(no jobs)")
    return releases


def rollback(settings: Settings, reason: str, timeout: float = 300.0) -> None:
    """Undo an unfinished restart: cancel what runs of the jobs, stop the cluster, switch
    back to the old release, start, restore every job from the same savepoint."""
    intent = _current(settings)
    intent.reason = reason
    _save(settings, intent, "rolling-back", reason=reason[:2000])
    agents = Agents(settings)
    registry = JobRegistry(settings)
    for job in intent.saved:
        if registry.view(job).is_live:
            try:
                registry.cancel(job)
            except StreamopsError as exc:
                log.warning("could not cancel %s during rollback: %s", job, exc)
    if any(step["phase"] == "stopping" for step in intent.steps):
        _stop_all(agents)
        if intent.release_from:
            switch_release_on_nodes(agents, intent.release_from)
        _start_all(settings, agents, intent.workers)
    else:
        log.info("the cluster was not stopped; restoring the saved jobs on it as it is")
    intent.restored = []
    _restore_again(settings, intent)
    _wait_healthy(settings, intent, timeout)
    _save(settings, intent, "rolled-back", reason=reason[:2000])


STEPS: tuple[Callable[[Settings], object], ...] = (
    savepoint_jobs, stop_cluster, switch_release, start_cluster, restore_jobs, verify_healthy)


def restart(settings: Settings, release: str, timeout: float = 300.0) -> RestartIntent:
    """The whole restart (CLI); on failure roll back and raise ``ClusterRestartFailed``."""
    begin(settings, release)
    try:
        for step in STEPS:
            step(settings)
    except StreamopsError as exc:
        reason = f"{type(exc).__name__}: {exc}"
        log.error("cluster restart to %s failed: %s; rolling back", release, reason)
        rollback(settings, reason, timeout)
        raise ClusterRestartFailed(
            f"cluster restart to {release} failed ({reason}); rolled back to release "
            f"{_current_or_last(settings).release_from or 'none'} and restored the jobs"
        ) from exc
    return _current_or_last(settings)


def _current_or_last(settings: Settings) -> RestartIntent:
    intent = load_intent(settings)
    if intent is None:
        raise ClusterRestartFailed("the cluster restart intent record disappeared")
    return intent
