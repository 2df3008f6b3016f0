"""The cluster restart's intent record, and the choice of its path.

``<state>/cluster/intents/cluster-restart.json`` (:class:`RestartIntent`, kept by the intent
store) holds what a restart is doing: from/to release, the jobs it moves and their specs by
value, the workers, the path, the steps done. Both paths
(:mod:`streamops.procedures.cluster_restart`, the full stop, and
:mod:`streamops.procedures.cluster_handover`, the warm handover) write it before each
destructive step and update it after, so a retried step resumes rather than repeats harm.

The path (:data:`PATHS`) is chosen once, by :func:`begin`:

- ``warm``: the release switched under the running daemons and every job handed over to a
  standby that starts on it (the gap of a warm upgrade);
- ``full``: every job saved, the whole cluster stopped, switched, started, the jobs restored;
- ``auto``: ``warm`` while jobs run, ``full`` when none does (nothing to hand over, and the
  daemons then start on the new release too).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any

from streamops.cluster.releases import ReleaseStore
from streamops.exceptions import ClusterRestartFailed
from streamops.procedures.backlog_gate import CLUSTER_INTENT, hold_for_backlog
from streamops.procedures.intent_store import IntentStore, StepRecord
from streamops.world.operations import Nodes, Operations, World

log = logging.getLogger("streamops.procedures.cluster_restart")

OPERATION = "cluster-restart"
OWNER = "cluster-restart"  # of the jobs' own restart and upgrade intents
PATHS = ("auto", "warm", "full")


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
    restored: list[str] = field(default_factory=list)  # restored (full) or handed over (warm)
    started_at: float = field(default_factory=time.time)
    steps: list[dict[str, Any]] = field(default_factory=list)
    reason: str | None = None
    owner: str = "cli"  # ``cli`` or ``airflow:<dag>/<run>``: who runs (and resumes) it
    path: str = "full"  # ``warm`` or ``full`` (intents written before paths were all full)
    drivers: dict[str, str] = field(default_factory=dict)  # job -> its driver at the begin
    releases_before: dict[str, str] = field(default_factory=dict)  # job -> release it reported

    def reached(self, phase: str) -> bool:
        """Whether the restart recorded ``phase`` at some step (e.g. ``switched``)."""
        return any(step.get("phase") == phase for step in self.steps)


STORE = IntentStore(RestartIntent, OPERATION, error=ClusterRestartFailed, history=True,
                    describe=lambda i: f"cluster restart to {i.release_to} ({i.path})")  # fmt: skip


def load_intent(world: World) -> RestartIntent | None:
    return STORE.load(world)


def current(ops: Operations) -> RestartIntent:
    """The unfinished restart; :class:`ClusterRestartFailed` when there is none."""
    intent = load_intent(ops)
    if intent is None or intent.finished:
        raise ClusterRestartFailed("no cluster restart in progress; begin one first "
                                   "(`streamops cluster restart --release R`)")
    return intent


def current_or_last(ops: Operations) -> RestartIntent:
    intent = load_intent(ops)
    if intent is None:
        raise ClusterRestartFailed("the cluster restart intent record disappeared")
    return intent


def nodes_of(ops: Operations) -> Nodes:
    return ops.require_nodes(ClusterRestartFailed)


def choose_path(path: str, jobs: list[str]) -> str:
    """``warm`` or ``full`` for the requested ``path`` (one of :data:`PATHS`)."""
    if path not in PATHS:
        raise ClusterRestartFailed(f"unknown restart path {path!r}: one of {', '.join(PATHS)}")
    if path == "auto":
        return "warm" if jobs else "full"
    return path


def begin(ops: Operations, release: str, owner: str = "cli", path: str = "auto", *,
          now: bool = False) -> RestartIntent:  # fmt: skip
    """Record the intent of restarting onto ``release`` by ``path``; resume an unfinished one
    to it, on the path it took (``owner``, the CLI or a DAG run, is who runs it from then on).
    A new one first waits for the backlog of every running job with a ``latency_slo``, or is
    refused (``now``: at once; :mod:`.backlog_gate`)."""
    store = ReleaseStore(ops.settings)
    store.path(release)  # UnknownRelease naming the known ones
    choose_path(path, [])  # an unknown path is refused before anything
    intent = load_intent(ops)
    if intent is not None and not intent.finished:
        if intent.release_to != release:
            raise ClusterRestartFailed(
                f"a cluster restart to {intent.release_to} is in progress (phase "
                f"{intent.phase}); resume it with that release or roll it back first")
        log.info("resuming the cluster restart to %s (%s path) at phase %s", release,
                 intent.path, intent.phase)  # fmt: skip
        if intent.owner != owner:
            intent.owner = owner
            STORE.save(ops, intent, intent.phase, owner=owner)
        return intent
    views = {v.name: v for v in ops.registry.list() if v.is_live}
    jobs = sorted(views)
    specs = {job: ops.registry.current_spec(job) for job in jobs}
    for job in jobs:
        hold_for_backlog(ops, job, specs[job], CLUSTER_INTENT, now=now,
                         error=ClusterRestartFailed)  # fmt: skip
    stamp = time.strftime("%Y%m%d-%H%M%S")
    intent = RestartIntent(
        release_from=store.active(), release_to=release, workers=nodes_of(ops).running_workers(),
        savepoints={job: f"{job}-restart-{stamp}" for job in jobs},
        specs={job: spec.model_dump(mode="json") for job, spec in specs.items()},
        owner=owner, path=choose_path(path, jobs),
        drivers={job: str(views[job].driver_id) for job in jobs},
        releases_before={job: r for job in jobs if (r := views[job].status.classpath_release)})
    STORE.save(ops, intent, "begun", jobs=jobs, workers=intent.workers, path=intent.path)
    how = ("each job handed over to a standby on the new release; the daemons run on"
           if intent.path == "warm" else "the whole cluster stopped and started")
    log.info("cluster restart %s → %s by the %s path (%s): jobs %s, workers %s",
             intent.release_from, release, intent.path, how, ", ".join(jobs) or "none",
             ", ".join(intent.workers))  # fmt: skip
    return intent


def record_failure(world: World, reason: str) -> None:
    """Keep why a step failed in the intent (the rollback reports it)."""
    intent = load_intent(world)
    if intent is not None and not intent.finished:
        intent.reason = reason
        STORE.save(world, intent, intent.phase, failure=reason[:2000])
