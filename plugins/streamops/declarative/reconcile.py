"""One reconcile pass: for every applied resource, observe → decide → act → record its status.

Savepoint requests go first (a request with cancel stops its job before the deployment looks
at it), then the deployments, each for up to ``MAX_STEPS`` decisions (a resumed action and the
next one in the same pass). One pass runs at a time (``reconcile.lock``). The action is
recorded in flight before it starts (:mod:`.inflight`, an intent like the procedures') and
closed once it ended (done, or failed: as failed when it changed nothing), so a pass killed
at any point leaves either nothing to redo or an action that the next pass resumes.
An action that fails, with any exception, is recorded on the resource (its condition, and
``failed`` with the generation: the same generation is not tried again in a loop, a new apply
is) and never stops the pass: the other resources are reconciled, and the pass reports every
error. An action resumed after a newer apply records its outcome against the generation it
ran for (:mod:`.recording`), and the newer generation is decided on next, in the same pass. A
resource whose file cannot be read back is a ``Valid: False`` condition on it, and an error of
the pass; the others are reconciled.
"""

from __future__ import annotations

import logging
import os
import time
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Any

from streamops.declarative import act, inflight, recording
from streamops.declarative.decide import (
    Action,
    ActionKind,
    DeploymentFacts,
    RequestFacts,
    decide_deployment,
    decide_request,
)
from streamops.declarative.inflight import InFlight
from streamops.declarative.observe import observe
from streamops.exceptions import JobBusy, UnreadableFile
from streamops.procedures.job_lease import acting_as, job_operation
from streamops.state.declarative.resources import DEPLOYMENT, SAVEPOINT_REQUEST, Deployment
from streamops.state.declarative.status import (
    Cancelled,
    DeploymentStatus,
    RequestStatus,
    set_condition,
)
from streamops.state.declarative.store import Applied, Store, Unreadable
from streamops.state.savepoints import catalogue
from streamops.world.operations import Operations, World
from streamops.world.port import operations
from streamops_contract.state.locks import file_lock

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
    with file_lock(store.lock_file), acting_as("reconcile", f"reconcile-{os.getpid()}-"
                                                            f"{time.time():.0f}"):  # fmt: skip
        requests, bad_requests = store.scan(SAVEPOINT_REQUEST)
        for bad in bad_requests if only is None else []:  # whose job it is cannot be read
            _guard(result, bad.kind, bad.name, lambda b=bad: _unreadable(store, b))
        for applied in requests:
            if only is None or applied.resource.job == only:  # type: ignore[union-attr]
                _guard(result, applied.kind, applied.name,
                       lambda a=applied: _request(ops, store, a))  # fmt: skip
        deployments, bad_deployments = store.scan(DEPLOYMENT)
        for bad in bad_deployments:
            if only is None or bad.name == only:
                _guard(result, bad.kind, bad.name, lambda b=bad: _unreadable(store, b))
        for applied in deployments:
            if only is None or applied.name == only:
                _guard(result, applied.kind, applied.name,
                       lambda a=applied: _deployment(ops, store, a))  # fmt: skip
    result.seconds = round(time.monotonic() - started, 3)
    return result


def _guard(result: PassResult, kind: str, name: str, run: Any) -> None:
    """Run one resource's reconcile; whatever it raises is that resource's error alone."""
    try:
        for action, text, error in run():
            result.actions.append((f"{kind}/{name}", action, text))
            if error:
                result.errors.append(f"{kind}/{name}: {action}: {error}")
    except Exception as exc:
        log.exception("reconcile of %s %s failed", kind, name)
        result.errors.append(f"{kind}/{name}: {recording.error_text(exc)}")


def _unreadable(store: Store, bad: Unreadable) -> list[tuple[str, str, str | None]]:
    """A resource whose file cannot be read back: its status says so (a status that cannot
    be read either is started anew), and it is an error of the pass."""
    status: DeploymentStatus | RequestStatus
    try:
        status = (store.deployment_status(bad.name) if bad.kind == DEPLOYMENT
                  else store.request_status(bad.name))  # fmt: skip
    except UnreadableFile:
        status = DeploymentStatus() if bad.kind == DEPLOYMENT else RequestStatus()
    recording.unreadable(status, bad.error)
    store.save_status(bad.kind, bad.name, status)
    return [("invalid", bad.error, bad.error)]


# --- deployments -----------------------------------------------------------------------
def _deployment(ops: Operations, store: Store,
                applied: Applied) -> list[tuple[str, str, str | None]]:  # fmt: skip
    done: list[tuple[str, str, str | None]] = []
    for _ in range(MAX_STEPS):
        current = store.get(DEPLOYMENT, applied.name)
        if current is None:
            break
        action, error, generation = _deployment_step(ops, store, current)
        if action.kind in (ActionKind.NONE, ActionKind.WAIT):
            if not done:
                done.append((action.kind.value, action.reason, None))
            break
        done.append((action.kind.value, action.reason, error))
        if action.kind is ActionKind.REMOVE or (error and generation == current.generation):
            break  # a resumed action of an older generation failed: decide on the newer one
    return done


def facts_for(ops: Operations, store: Store,
              applied: Applied) -> DeploymentFacts:  # fmt: skip
    """What the decision on a deployment looks at, observed now."""
    dep = applied.resource
    assert isinstance(dep, Deployment)
    seen = observe(ops.settings, [dep.name], with_savepoints={dep.name}, client=ops.client)
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
        deleted_savepoint=store.deleted_savepoint(dep.name),
    )  # fmt: skip


def _deployment_step(ops: Operations, store: Store,
                     applied: Applied) -> tuple[Action, str | None, int]:  # fmt: skip
    """One decision on ``applied`` and its action: the action, its error, and the generation
    it ran for."""
    dep, gen = applied.resource, applied.generation
    assert isinstance(dep, Deployment)
    facts = facts_for(ops, store, applied)
    action, status = decide_deployment(facts), facts.status
    recording.readable(status)
    log.info("deployment %s (generation %d): %s: %s", dep.name, gen, action.kind.value,
             action.reason)  # fmt: skip
    if action.kind is ActionKind.REMOVE:
        kept = status.suspended.savepoint if status.suspended else None
        if store.remove(DEPLOYMENT, dep.name, generation=gen) and kept:
            store.remember_deletion(dep.name, kept)  # applied again: it starts from there
        return action, None, gen
    if action.kind in (ActionKind.NONE, ActionKind.WAIT):
        recording.observed(status, applied, facts.job, action)
        store.save_status(DEPLOYMENT, dep.name, status)
        return action, None, gen
    hold = _hold(ops, dep.name, f"reconcile: {action.kind.value}")
    if not isinstance(hold, ExitStack):
        waiting = Action(ActionKind.WAIT, hold)
        log.info("deployment %s: %s", dep.name, hold)
        recording.observed(status, applied, facts.job, waiting)
        store.save_status(DEPLOYMENT, dep.name, status)
        return waiting, None, gen
    with hold:
        return _act_on_deployment(ops, store, applied, facts, action)


def _hold(ops: Operations, job: str, procedure: str) -> ExitStack | str:
    """The job's operation lease, held (an exit stack to leave it), or what the resource
    waits for: the job is busy with another operation (tried again at the next pass)."""
    hold = ExitStack()
    try:
        hold.enter_context(job_operation(ops, job, procedure))
    except JobBusy as exc:
        who = exc.holder.describe() if exc.holder is not None else str(exc)  # type: ignore[attr-defined]
        return f"waits for the job's operation holder ({who}); tried again at the next pass"
    return hold


def _act_on_deployment(ops: Operations, store: Store, applied: Applied, facts: DeploymentFacts,
                       action: Action) -> tuple[Action, str | None, int]:  # fmt: skip
    """Carry ``action`` out, the job's operation lease held, over its in-flight record."""
    dep, gen, status = applied.resource, applied.generation, facts.status
    assert isinstance(dep, Deployment)
    record = facts.inflight
    if record is None:
        detail = dict(action.detail)
        if action.kind is ActionKind.SUSPEND:
            detail["spec_ran"] = facts.job.running_spec
        record = InFlight(DEPLOYMENT, dep.name, action.kind.value, applied.generation, detail)
        act.prepare(record, dep.name)
        inflight.begin(store, record)  # before acting: a killed pass resumes it
    status.phase = _PROGRESS.get(record.action, status.phase)  # type: ignore[assignment]
    status.conditions = set_condition(status.conditions, "Progressing", True, record.action,
                                      action.reason)  # fmt: skip
    store.save_status(DEPLOYMENT, dep.name, status)
    try:
        outcome = act.act_deployment(ops, record, lambda r: inflight.save(store, r), dep)
    except Exception as exc:  # any failure of the action is this resource's, recorded
        log.exception("deployment %s: %s failed", dep.name, record.action)
        outcome = act.Outcome(recording.error_text(exc), failed=recording.error_text(exc))
    recording.outcome(status, applied, record, outcome)
    if record.action == "suspend" and record.detail.get("cause") == "delete":
        status.phase = "Deleting"
    store.save_status(DEPLOYMENT, dep.name, status)
    _close(store, record, outcome.failed)
    error = outcome.failed
    if error is not None and record.generation != gen:
        error = f"{record.action} for generation {record.generation} (now {gen}): {error}"
    return action, error, record.generation


# --- savepoint requests ----------------------------------------------------------------
def _request(ops: Operations, store: Store,
             applied: Applied) -> list[tuple[str, str, str | None]]:  # fmt: skip
    from streamops.state.declarative.resources import SavepointRequest

    req = applied.resource
    assert isinstance(req, SavepointRequest)
    record = inflight.load(store, SAVEPOINT_REQUEST, req.name)
    status = store.request_status(req.name)
    seen = observe(ops.settings, [req.job], client=ops.client)
    facts = RequestFacts(
        request=req, status=status, job=seen.job(req.job), deleting=applied.deleting,
        inflight=record, cluster_up=seen.cluster_up,
        deployment_busy=inflight.load(store, DEPLOYMENT, req.job) is not None,
        name_taken=ops.layout.savepoint(req.name).is_dir(),
    )  # fmt: skip
    action = decide_request(facts)
    log.info("savepoint request %s: %s: %s", req.name, action.kind.value, action.reason)
    status.observed_generation = applied.generation
    recording.readable(status)
    if action.kind is ActionKind.REMOVE:
        store.remove(SAVEPOINT_REQUEST, req.name, generation=applied.generation)
        return [(action.kind.value, action.reason, None)]
    if action.kind in (ActionKind.NONE, ActionKind.WAIT):
        store.save_status(SAVEPOINT_REQUEST, req.name, status)
        return [(action.kind.value, action.reason, None)]
    if action.kind is ActionKind.FAIL_REQUEST:
        _request_ended(status, "Failed", action.reason)
        store.save_status(SAVEPOINT_REQUEST, req.name, status)
        return [(action.kind.value, action.reason, action.reason)]
    hold = _hold(ops, req.job, "reconcile: savepoint request")
    if not isinstance(hold, ExitStack):
        log.info("savepoint request %s: %s", req.name, hold)
        status.conditions = set_condition(status.conditions, "Progressing", None, "Waiting",
                                          hold)  # fmt: skip
        store.save_status(SAVEPOINT_REQUEST, req.name, status)
        return [(ActionKind.WAIT.value, hold, None)]
    with hold:
        return _take(ops, store, applied, record, status, action)


def _take(ops: Operations, store: Store, applied: Applied, record: InFlight | None,
          status: RequestStatus, action: Action) -> list[tuple[str, str, str | None]]:  # fmt: skip
    """Take the requested savepoint, the job's operation lease held."""
    from streamops.state.declarative.resources import SavepointRequest

    req = applied.resource
    assert isinstance(req, SavepointRequest)
    if record is None:
        record = InFlight(SAVEPOINT_REQUEST, req.name, "take-savepoint", applied.generation)
        inflight.begin(store, record)
    status.state = "InProgress"
    store.save_status(SAVEPOINT_REQUEST, req.name, status)
    error = None
    try:
        outcome, created = act.take_savepoint(ops, record, lambda r: inflight.save(store, r),
                                              req)  # fmt: skip
    except Exception as exc:  # any failure is this request's, recorded
        log.exception("savepoint request %s failed", req.name)
        error = recording.error_text(exc)
        _request_ended(status, "Failed", error)
    else:
        status.creation_time = created
        _request_ended(status, "Exported", outcome.message)
        if req.cancel:
            _cancelled_by(store, req.job, req.name)
    store.save_status(SAVEPOINT_REQUEST, req.name, status)
    _close(store, record, error)
    return [(action.kind.value, status.message, error)]


def _close(store: Store, record: InFlight, failure: str | None) -> None:
    """The action ended: its record closed, as failed when it failed having changed nothing
    (health shows it; the resource's status says the failure)."""
    if failure is None:
        inflight.done(store, record)
    elif inflight.failed(store, record, failure):
        log.warning("%s %s: %s failed having changed nothing: %s", record.kind, record.name,
                    record.action, failure.splitlines()[0] if failure else "?")  # fmt: skip


def _request_ended(status: Any, state: str, message: str) -> None:
    status.state, status.message = state, message[:2000]
    status.conditions = set_condition(status.conditions, "Complete", state == "Exported", state,
                                      message[:2000])  # fmt: skip


def _cancelled_by(store: Store, job: str, request: str) -> None:
    """A request with cancel stopped the job: its deployment (if any) says so, and stays
    stopped until it is applied again."""
    try:
        applied = store.get(DEPLOYMENT, job)
    except UnreadableFile as exc:
        log.warning("savepoint request %s cancelled job %s, whose deployment cannot be read: "
                    "%s", request, job, exc)  # fmt: skip
        return
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
