"""One reconcile pass: for every applied resource, observe → decide → act → record its status.

Savepoint requests go first (a request with cancel stops its job before the deployment looks
at it), then the deployments, each for up to ``MAX_STEPS`` decisions (a resumed action and the
next one in the same pass). One pass runs at a time (``reconcile.lock``). The action is
recorded in flight before it starts (:mod:`.inflight`) and cleared once it ended, so a pass
killed at any point leaves either nothing to redo or an action that the next pass resumes.
An action that fails is recorded on the resource (its condition, and ``failed`` with the
generation: the same generation is not tried again in a loop, a new apply is) and never
stops the pass: the other resources are reconciled, and the pass reports every error.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any

from streamops.declarative import act, inflight
from streamops.declarative.decide import (
    Action,
    ActionKind,
    DeploymentFacts,
    RequestFacts,
    decide_deployment,
    decide_request,
)
from streamops.declarative.inflight import InFlight
from streamops.declarative.observe import JobSeen, observe
from streamops.declarative.resources import DEPLOYMENT, SAVEPOINT_REQUEST, Deployment
from streamops.declarative.status import (
    Blocked,
    Cancelled,
    DeploymentStatus,
    FailedAction,
    SavepointRecord,
    Suspended,
    set_condition,
)
from streamops.declarative.store import Applied, Store
from streamops.exceptions import StreamopsError
from streamops.procedures.operations import Operations, World
from streamops.procedures.world import operations
from streamops.state.locks import file_lock
from streamops.state.savepoints import catalogue

log = logging.getLogger("streamops.declarative.reconcile")

MAX_STEPS = 4
_PROGRESS = {"deploy": "Deploying", "upgrade": "Upgrading", "suspend": "Suspending",
             "restart-last-checkpoint": "Restarting",
             "restart-savepoint": "Restarting"}  # fmt: skip


@dataclass
class PassResult:
    actions: list[tuple[str, str, str]] = field(default_factory=list)  # resource, action, text
    errors: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.errors


def reconcile_once(world: World, *, only: str | None = None) -> PassResult:
    """One pass over every resource (``only``: the deployment and requests of that job), on
    the procedure kit's operations port of ``world`` (the real one of these settings)."""
    started, result = time.monotonic(), PassResult()
    ops = operations(world)
    store = Store(ops.layout)
    with file_lock(store.lock_file):
        for applied in store.list(SAVEPOINT_REQUEST):
            if only is None or applied.resource.job == only:  # type: ignore[union-attr]
                _guard(result, applied, lambda a=applied: _request(ops, store, a))
        for applied in store.list(DEPLOYMENT):
            if only is None or applied.name == only:
                _guard(result, applied,
                       lambda a=applied: _deployment(ops, store, a))  # fmt: skip
    result.seconds = round(time.monotonic() - started, 3)
    return result


def _guard(result: PassResult, applied: Applied, run: Any) -> None:
    try:
        for action, text, error in run():
            result.actions.append((f"{applied.kind}/{applied.name}", action, text))
            if error:
                result.errors.append(f"{applied.kind}/{applied.name}: {action}: {error}")
    except StreamopsError as exc:
        log.exception("reconcile of %s %s failed", applied.kind, applied.name)
        result.errors.append(f"{applied.kind}/{applied.name}: {exc}")


# --- deployments -----------------------------------------------------------------------
def _deployment(ops: Operations, store: Store,
                applied: Applied) -> list[tuple[str, str, str | None]]:  # fmt: skip
    done: list[tuple[str, str, str | None]] = []
    for _ in range(MAX_STEPS):
        current = store.get(DEPLOYMENT, applied.name)
        if current is None:
            break
        action, error = _deployment_step(ops, store, current)
        if action.kind in (ActionKind.NONE, ActionKind.WAIT):
            if not done:
                done.append((action.kind.value, action.reason, None))
            break
        done.append((action.kind.value, action.reason, error))
        if error or action.kind is ActionKind.REMOVE:
            break
    return done


def facts_for(ops: Operations, store: Store,
              applied: Applied) -> DeploymentFacts:  # fmt: skip
    """What the decision on a deployment looks at, observed now."""
    dep = applied.resource
    assert isinstance(dep, Deployment)
    seen = observe(ops.settings, [dep.name], with_savepoints={dep.name}, registry=ops.registry)
    requests = [a for a in store.list(SAVEPOINT_REQUEST)
                if a.resource.job == dep.name  # type: ignore[union-attr]
                and inflight.load(store, SAVEPOINT_REQUEST, a.name) is not None]  # fmt: skip
    return DeploymentFacts(
        deployment=dep, generation=applied.generation, status=store.deployment_status(dep.name),
        job=seen.job(dep.name), now=seen.now, deleting=applied.deleting,
        inflight=inflight.load(store, DEPLOYMENT, dep.name), cluster_up=seen.cluster_up,
        request_in_flight=requests[0].name if requests else None,
        savepoints=seen.savepoints.get(dep.name, []),
        protected=set(catalogue.protected_savepoints(ops.layout)),
    )  # fmt: skip


def _deployment_step(ops: Operations, store: Store,
                     applied: Applied) -> tuple[Action, str | None]:  # fmt: skip
    dep = applied.resource
    assert isinstance(dep, Deployment)
    facts = facts_for(ops, store, applied)
    action, status = decide_deployment(facts), facts.status
    log.info("deployment %s (generation %d): %s: %s", dep.name, applied.generation,
             action.kind.value, action.reason)  # fmt: skip
    if action.kind is ActionKind.REMOVE:
        store.remove(DEPLOYMENT, dep.name)
        return action, None
    if action.kind in (ActionKind.NONE, ActionKind.WAIT):
        _observed(status, applied, facts.job, action)
        store.save_status(DEPLOYMENT, dep.name, status)
        return action, None
    record = facts.inflight
    if record is None:
        detail = dict(action.detail)
        if action.kind is ActionKind.SUSPEND:
            detail["spec_ran"] = facts.job.running_spec
        record = InFlight(DEPLOYMENT, dep.name, action.kind.value, applied.generation, detail)
        act.prepare(record, dep.name)
        inflight.save(store, record)  # before acting: a killed pass resumes it
    status.phase = _PROGRESS.get(record.action, status.phase)  # type: ignore[assignment]
    status.conditions = set_condition(status.conditions, "Progressing", True, record.action,
                                      action.reason)  # fmt: skip
    store.save_status(DEPLOYMENT, dep.name, status)
    try:
        outcome = act.act_deployment(ops, record, lambda r: inflight.save(store, r), dep)
    except StreamopsError as exc:
        log.exception("deployment %s: %s failed", dep.name, record.action)
        outcome = act.Outcome(str(exc), failed=str(exc))
    _outcome(status, applied, record, outcome)
    if record.action == "suspend" and record.detail.get("cause") == "delete":
        status.phase = "Deleting"
    store.save_status(DEPLOYMENT, dep.name, status)
    inflight.clear(store, DEPLOYMENT, dep.name)
    return action, outcome.failed


def _outcome(status: DeploymentStatus, applied: Applied, record: InFlight,
             outcome: act.Outcome) -> None:  # fmt: skip
    dep, now, gen = applied.resource, time.time(), applied.generation
    assert isinstance(dep, Deployment)
    status.observed_generation = gen
    status.message = outcome.message
    status.last_action = {"action": record.action, "seconds": round(now - record.started_at, 2),
                          **outcome.times}  # fmt: skip
    status.conditions = set_condition(status.conditions, "Progressing", False, record.action,
                                      outcome.message)  # fmt: skip
    if (
        outcome.savepoint
        and outcome.savepoint_kind
        and not any(r.name == outcome.savepoint for r in status.savepoint_history)
    ):
        status.savepoint_history.append(
            SavepointRecord(name=outcome.savepoint, kind=outcome.savepoint_kind, at=now)
        )  # type: ignore[arg-type]
    if outcome.blocked_plan is not None:
        status.blocked = Blocked(generation=gen, plan=outcome.blocked_plan)
        status.conditions = set_condition(status.conditions, "UpgradeBlocked", True,
                                          "PlanRefused", outcome.blocked_plan)  # fmt: skip
        status.phase = "Running"
        return
    if outcome.failed is not None:
        prev = status.failed
        again = prev is not None and (prev.generation, prev.action) == (gen, record.action)
        status.failed = FailedAction(generation=gen, action=record.action,
                                     message=outcome.failed[:2000], at=now,
                                     count=prev.count + 1 if again and prev else 1)  # fmt: skip
        status.conditions = set_condition(status.conditions, "Ready", False, "ActionFailed",
                                          f"{record.action}: {outcome.failed[:2000]}")  # fmt: skip
        return
    status.failed = None
    if outcome.driver:
        status.driver, status.submission_time, status.completion_time = outcome.driver, now, None
        status.version = str(record.detail.get("spec", {}).get("version") or status.version)
    if record.action in ("deploy", "upgrade", "restart-last-checkpoint", "restart-savepoint"):
        status.phase = "Running"
        status.suspended = status.cancelled = None
        if status.restart_nonce is None or record.action == "restart-savepoint":
            status.restart_nonce = dep.restart_nonce
    if record.action == "upgrade":
        status.blocked = None
        status.conditions = set_condition(status.conditions, "UpgradeBlocked", False,
                                          "Upgraded", outcome.message)  # fmt: skip
    if record.action == "suspend":
        status.phase, status.completion_time, status.cancelled = "Suspended", now, None
        status.suspended = Suspended(savepoint=outcome.savepoint,
                                     cause=str(record.detail.get("cause") or "suspended"),
                                     at=now, spec=record.detail.get("spec_ran"))  # fmt: skip
    if record.action == "periodic-savepoint":
        status.last_periodic = now
    if record.action == "prune":
        pruned = set(record.detail.get("pruned", []))
        status.savepoint_history = [r for r in status.savepoint_history if r.name not in pruned]
    status.conditions = set_condition(status.conditions, "Ready",
                                      status.phase == "Running" and dep.state == "running",
                                      status.phase, outcome.message)  # fmt: skip


def _observed(status: DeploymentStatus, applied: Applied, job: JobSeen, action: Action) -> None:
    """The status when nothing was done: what the observation shows."""
    dep, gen = applied.resource, applied.generation
    assert isinstance(dep, Deployment)
    if action.kind is ActionKind.WAIT:
        status.conditions = set_condition(status.conditions, "Progressing", None, "Waiting",
                                          action.reason)  # fmt: skip
        return
    status.observed_generation = gen
    if action.detail.get("record_cancel"):
        status.cancelled = Cancelled(request="(outside the reconcile)",
                                     savepoint=str(action.detail["record_cancel"]),
                                     generation=gen, at=job.stopped_at or time.time())  # fmt: skip
    status.phase = action.phase or status.phase  # type: ignore[assignment]
    if job.live:
        status.driver, status.version = job.driver, job.version
        status.submission_time, status.completion_time = job.submitted_at, None
        if status.restart_nonce is None:
            status.restart_nonce = dep.restart_nonce
    elif status.driver and status.completion_time is None:
        status.completion_time = job.stopped_at or time.time()
    if status.blocked and status.blocked.generation != gen:
        status.blocked = None
        status.conditions = set_condition(status.conditions, "UpgradeBlocked", False,
                                          "Superseded", "a later apply replaced it")  # fmt: skip
    desired = dep.effective_spec.model_dump(mode="json")
    ready = dep.state == "running" and job.healthy and job.running_spec == desired
    status.conditions = set_condition(status.conditions, "Ready", ready, status.phase,
                                      action.reason)  # fmt: skip
    status.conditions = set_condition(status.conditions, "Progressing", False, "Idle",
                                      action.reason)  # fmt: skip
    status.message = action.reason


# --- savepoint requests ----------------------------------------------------------------
def _request(ops: Operations, store: Store,
             applied: Applied) -> list[tuple[str, str, str | None]]:  # fmt: skip
    from streamops.declarative.resources import SavepointRequest

    req = applied.resource
    assert isinstance(req, SavepointRequest)
    record = inflight.load(store, SAVEPOINT_REQUEST, req.name)
    status = store.request_status(req.name)
    seen = observe(ops.settings, [req.job], registry=ops.registry)
    facts = RequestFacts(
        request=req, status=status, job=seen.job(req.job), deleting=applied.deleting,
        inflight=record, cluster_up=seen.cluster_up,
        deployment_busy=inflight.load(store, DEPLOYMENT, req.job) is not None,
        name_taken=ops.layout.savepoint(req.name).is_dir(),
    )  # fmt: skip
    action = decide_request(facts)
    log.info("savepoint request %s: %s: %s", req.name, action.kind.value, action.reason)
    status.observed_generation = applied.generation
    if action.kind is ActionKind.REMOVE:
        store.remove(SAVEPOINT_REQUEST, req.name)
        return [(action.kind.value, action.reason, None)]
    if action.kind in (ActionKind.NONE, ActionKind.WAIT):
        store.save_status(SAVEPOINT_REQUEST, req.name, status)
        return [(action.kind.value, action.reason, None)]
    if action.kind is ActionKind.FAIL_REQUEST:
        _request_ended(status, "Failed", action.reason)
        store.save_status(SAVEPOINT_REQUEST, req.name, status)
        return [(action.kind.value, action.reason, action.reason)]
    if record is None:
        record = InFlight(SAVEPOINT_REQUEST, req.name, "take-savepoint", applied.generation)
        inflight.save(store, record)
    status.state = "InProgress"
    store.save_status(SAVEPOINT_REQUEST, req.name, status)
    error = None
    try:
        outcome, created = act.take_savepoint(ops, record, lambda r: inflight.save(store, r),
                                              req)  # fmt: skip
    except StreamopsError as exc:
        error = str(exc)
        _request_ended(status, "Failed", error)
    else:
        status.creation_time = created
        _request_ended(status, "Exported", outcome.message)
        if req.cancel:
            _cancelled_by(store, req.job, req.name)
    store.save_status(SAVEPOINT_REQUEST, req.name, status)
    inflight.clear(store, SAVEPOINT_REQUEST, req.name)
    return [(action.kind.value, status.message, error)]


def _request_ended(status: Any, state: str, message: str) -> None:
    status.state, status.message = state, message[:2000]
    status.conditions = set_condition(status.conditions, "Complete", state == "Exported", state,
                                      message[:2000])  # fmt: skip


def _cancelled_by(store: Store, job: str, request: str) -> None:
    """A request with cancel stopped the job: its deployment (if any) says so, and stays
    stopped until it is applied again."""
    applied = store.get(DEPLOYMENT, job)
    if applied is None:
        return
    status, now = store.deployment_status(job), time.time()
    status.cancelled = Cancelled(request=request, savepoint=request, generation=applied.generation,
                                 at=now)  # fmt: skip
    status.suspended = None
    status.phase, status.completion_time = "Cancelled", now
    status.message = f"cancelled by savepoint request {request}"
    status.conditions = set_condition(status.conditions, "Ready", False, "Cancelled",
                                      status.message)  # fmt: skip
    store.save_status(DEPLOYMENT, job, status)
