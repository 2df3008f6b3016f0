"""Decide: one next action from what is desired and what is observed. Pure: no I/O, no clock
(the observation carries ``now``), so every case is a row of a table
(``tests/unit/declarative/test_decide.py``).

A deployment, in order (the first rule that matches decides):

1. an action in flight (a pass was killed during it) → ``continue`` it;
2. deleted → ``suspend`` (savepoint with cancel) while it runs, then ``remove``;
3. the master does not answer → ``wait``;
4. a savepoint request with cancel on its job is in flight → ``wait``;
5. ``state: suspended`` → ``suspend`` while it runs (whatever else is pending: a blocked or
   failed upgrade never holds a suspend back), else nothing (Suspended);
6. ``state: running`` and the job does not run:
   a. stopped by a savepoint request's (or anyone's) cancel, and the deployment not applied
      since → nothing (Cancelled); applied since → ``deploy`` the spec from its
      ``initial_savepoint``, else from the cancel's savepoint;
   b. suspended → ``deploy`` the spec that ran from the suspend's savepoint (a spec changed
      meanwhile is an upgrade afterwards, planned against the running stages), or, suspended
      without a savepoint, the desired spec on its last checkpoints;
   c. never submitted → ``deploy`` the spec (from ``initial_savepoint`` if given);
      created again after its deletion (the job still stopped to the savepoint the removed
      deployment was stopped to) → ``deploy`` the spec from its ``initial_savepoint``, else
      from that savepoint (a resource created is a change, whatever its generation);
   d. it died and was not relaunched → ``restart`` it from its last checkpoint, unless that
      failed ``MAX_FAILURES`` times for this generation (Failed);
7. ``state: running`` and it runs:
   a. the spec differs from the running one → ``upgrade``, unless the plan refused this
      generation (UpgradeBlocked) or it failed for it (a new apply tries again);
   b. the restart nonce changed → ``restart`` from a fresh savepoint;
   c. a periodic savepoint is due → ``savepoint``;
8. savepoints of the history to prune → ``prune``; else nothing.

A savepoint request: in flight → ``continue``; deleted → ``remove``; Exported or Failed →
nothing; the master down or its job's deployment busy → ``wait``; its name taken → ``fail``;
its job not running → ``fail``; else ``take`` it.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from streamops.declarative import history
from streamops.declarative.inflight import InFlight
from streamops.declarative.observe import JobSeen, SavepointSeen
from streamops.state.declarative.resources import Deployment, SavepointRequest
from streamops.state.declarative.status import DeploymentStatus, RequestStatus

MAX_FAILURES = 3


class ActionKind(StrEnum):
    NONE = "none"
    WAIT = "wait"
    CONTINUE = "continue"
    DEPLOY = "deploy"
    UPGRADE = "upgrade"
    SUSPEND = "suspend"
    RESTART_CHECKPOINT = "restart-last-checkpoint"
    RESTART_SAVEPOINT = "restart-savepoint"
    PERIODIC_SAVEPOINT = "periodic-savepoint"
    PRUNE = "prune"
    REMOVE = "remove"
    TAKE_SAVEPOINT = "take-savepoint"
    FAIL_REQUEST = "fail-request"


@dataclass(frozen=True)
class Action:
    kind: ActionKind
    reason: str
    phase: str = ""  # the phase to show while nothing is done (NONE, WAIT)
    detail: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class DeploymentFacts:
    """Everything one decision on a deployment looks at."""

    deployment: Deployment
    generation: int
    status: DeploymentStatus
    job: JobSeen
    now: float
    deleting: bool = False
    inflight: InFlight | None = None
    cluster_up: bool = True
    request_in_flight: str | None = None  # a savepoint request on the job, in flight
    savepoints: Sequence[SavepointSeen] = ()
    protected: Collection[str] = ()  # savepoints running jobs were started from
    deleted_savepoint: str | None = None  # a removed deployment of the name was stopped to it


def decide_deployment(f: DeploymentFacts) -> Action:
    d, st, job = f.deployment, f.status, f.job
    if f.inflight is not None:
        return Action(ActionKind.CONTINUE, f"resume {f.inflight.action} (in flight since "
                      "a pass that did not finish)",
                      detail={"action": f.inflight.action})  # fmt: skip
    if f.deleting:
        if f.cluster_up and job.live:
            return Action(ActionKind.SUSPEND, "deleted: stop the job with a savepoint",
                          detail={"cause": "delete"})  # fmt: skip
        return Action(ActionKind.REMOVE, "deleted and its job does not run")
    if not f.cluster_up:
        return Action(ActionKind.WAIT, "the master does not answer", phase=st.phase)
    if f.request_in_flight:
        return Action(ActionKind.WAIT, f"savepoint request {f.request_in_flight} on the job is "
                      "in flight", phase=st.phase)  # fmt: skip
    if d.state == "suspended":
        if job.live:
            cause = "state: suspended"
            if st.blocked and st.blocked.generation == f.generation:
                cause += " (an upgrade was blocked by its plan)"
            return Action(ActionKind.SUSPEND, cause, detail={"cause": cause})
        return _or_prune(f, Action(ActionKind.NONE, "suspended", phase="Suspended"))
    if not job.live:
        return _or_prune(f, _not_running(f))
    return _or_prune(f, _running(f))


def _failed_here(f: DeploymentFacts, *actions: str) -> bool:
    failed = f.status.failed
    return failed is not None and failed.generation == f.generation and failed.action in actions


def _not_running(f: DeploymentFacts) -> Action:
    d, st, job = f.deployment, f.status, f.job
    spec = d.effective_spec.model_dump(mode="json")
    cancelled = st.cancelled
    if (
        cancelled is None
        and st.suspended is None
        and job.stopped_by is not None
        and job.stopped_by == f.deleted_savepoint
    ):  # a deployment deleted (stopped to that savepoint), then created again
        savepoint = d.initial_savepoint or f.deleted_savepoint
        return _deploy(f, spec, savepoint, f"created again after its deletion: start from "
                       f"{'its initial_savepoint ' if d.initial_savepoint else ''}{savepoint}")
    if (
        cancelled is None
        and job.stopped_by
        and not (st.suspended and st.suspended.savepoint == job.stopped_by)
    ):
        # stopped by a savepoint with cancel of its own (CLI save-snapshot --cancel)
        return Action(ActionKind.NONE, f"stopped by a savepoint with cancel to {job.stopped_by}",
                      phase="Cancelled", detail={"record_cancel": job.stopped_by})  # fmt: skip
    if cancelled is not None and (st.suspended is None or st.suspended.at < cancelled.at):
        if cancelled.generation >= f.generation:
            return Action(ActionKind.NONE, f"cancelled by savepoint request {cancelled.request} "
                          f"(savepoint {cancelled.savepoint}); apply a change to start it "
                          "again", phase="Cancelled")  # fmt: skip
        savepoint = d.initial_savepoint or cancelled.savepoint
        return _deploy(f, spec, savepoint, f"applied after the cancel: start from {savepoint}")
    if st.suspended is not None:
        if st.suspended.savepoint:
            return _deploy(f, st.suspended.spec or spec, st.suspended.savepoint,
                           f"resume from the suspend's savepoint "
                           f"{st.suspended.savepoint}")  # fmt: skip
        return _deploy(f, spec, None, "resume on the last checkpoints (suspended without a "
                       "savepoint)")  # fmt: skip
    if job.running_spec is None:
        how = f" from savepoint {d.initial_savepoint}" if d.initial_savepoint else ""
        return _deploy(f, spec, d.initial_savepoint, f"not deployed yet: submit it{how}")
    if _failed_here(f, "restart-last-checkpoint") and st.failed and st.failed.count >= MAX_FAILURES:
        return Action(ActionKind.NONE, f"the restart failed {st.failed.count} times for this "
                      f"generation: {st.failed.message}; apply a change (e.g. restart_nonce) to "
                      "try again", phase="Failed")  # fmt: skip
    return Action(ActionKind.RESTART_CHECKPOINT, f"the job is {job.state} and was not "
                  "relaunched: restart it from its last checkpoint")  # fmt: skip


def _deploy(f: DeploymentFacts, spec: dict[str, Any], savepoint: str | None, why: str) -> Action:
    if _failed_here(f, "deploy") and f.status.failed and f.status.failed.count >= MAX_FAILURES:
        return Action(ActionKind.NONE, f"the deploy failed {f.status.failed.count} times for this "
                      f"generation: {f.status.failed.message}; apply a change to try again",
                      phase="Failed")  # fmt: skip
    return Action(ActionKind.DEPLOY, why, detail={"spec": spec, "savepoint": savepoint})


def _running(f: DeploymentFacts) -> Action:
    d, st, job = f.deployment, f.status, f.job
    spec = d.effective_spec.model_dump(mode="json")
    if job.running_spec != spec:
        if st.blocked and st.blocked.generation == f.generation:
            return Action(ActionKind.NONE, "the upgrade plan refused this version; the job runs "
                          "on", phase="Running")  # fmt: skip
        if _failed_here(f, "upgrade"):
            return Action(ActionKind.NONE, "the upgrade to this version failed; apply a change "
                          "to try again", phase="Running")  # fmt: skip
        old = (job.running_spec or {}).get("version")
        return Action(ActionKind.UPGRADE, f"version {old} runs, {d.spec.version} is desired "
                      f"(mode {d.upgrade.mode})", detail={"spec": spec})  # fmt: skip
    if st.restart_nonce is not None and st.restart_nonce != d.restart_nonce:
        return Action(ActionKind.RESTART_SAVEPOINT, f"restart_nonce {st.restart_nonce} → "
                      f"{d.restart_nonce}", detail={"nonce": d.restart_nonce})  # fmt: skip
    since = st.last_periodic or job.submitted_at
    if job.healthy and history.periodic_due(d.savepoints, since, f.now):
        return Action(ActionKind.PERIODIC_SAVEPOINT, "a periodic savepoint is due")
    return Action(ActionKind.NONE, "running as desired" if job.healthy else
                  f"the job is {job.state}, not healthy yet", phase="Running")  # fmt: skip


def _or_prune(f: DeploymentFacts, action: Action) -> Action:
    if action.kind is not ActionKind.NONE:
        return action
    keep = {*f.protected}
    if f.status.suspended and f.status.suspended.savepoint:
        keep.add(f.status.suspended.savepoint)
    doomed = history.to_prune(f.deployment.savepoints, f.status.savepoint_history,
                              f.savepoints, f.now, keep)  # fmt: skip
    if doomed:
        return Action(ActionKind.PRUNE, "; ".join(f"{n}: {why}" for n, why in doomed),
                      phase=action.phase, detail={"names": [n for n, _ in doomed],
                                                  **action.detail})  # fmt: skip
    return action


@dataclass(frozen=True)
class RequestFacts:
    request: SavepointRequest
    status: RequestStatus
    job: JobSeen
    deleting: bool = False
    inflight: InFlight | None = None
    cluster_up: bool = True
    deployment_busy: bool = False  # the job's deployment has an action in flight
    name_taken: bool = False  # a savepoint of the request's name exists


def decide_request(f: RequestFacts) -> Action:
    r = f.request
    if f.inflight is not None:
        return Action(ActionKind.CONTINUE, "resume the savepoint in flight",
                      detail={"action": f.inflight.action})  # fmt: skip
    if f.deleting:
        return Action(ActionKind.REMOVE, "deleted (its savepoint is kept)")
    if f.status.state in ("Exported", "Failed"):
        return Action(ActionKind.NONE, f"{f.status.state.lower()}", phase=f.status.state)
    if not f.cluster_up:
        return Action(ActionKind.WAIT, "the master does not answer", phase="Pending")
    if f.deployment_busy:
        return Action(ActionKind.WAIT, f"the deployment of {r.job} has an action in flight",
                      phase="Pending")  # fmt: skip
    if f.name_taken:
        return Action(ActionKind.FAIL_REQUEST, f"a savepoint named {r.name} exists already")
    if not f.job.live:
        return Action(ActionKind.FAIL_REQUEST, f"job {r.job} is not running (state "
                      f"{f.job.state}); nothing to savepoint")  # fmt: skip
    return Action(ActionKind.TAKE_SAVEPOINT, f"savepoint of {r.job}"
                  + (" with cancel" if r.cancel else ""))  # fmt: skip
