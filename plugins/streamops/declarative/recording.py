"""What one reconcile step records in a deployment's status: the outcome of an action (against
the generation the action ran for, which a resumed action may have outlived), what the
observation shows when nothing was done, and whether the resource's file could be read."""

from __future__ import annotations

import time
from typing import Any

from streamops.declarative import act
from streamops.declarative.decide import Action, ActionKind
from streamops.declarative.inflight import InFlight
from streamops.declarative.observe import JobSeen
from streamops.exceptions import StreamopsError
from streamops.state.declarative.resources import Deployment
from streamops.state.declarative.status import (
    OUTCOMES_KEPT,
    ActionOutcome,
    Blocked,
    Cancelled,
    DeploymentStatus,
    FailedAction,
    SavepointRecord,
    Suspended,
    set_condition,
)
from streamops.state.declarative.store import Applied


def error_text(exc: BaseException) -> str:
    """An exception as a status message: a streamops error says what it is; any other is
    named by its type too."""
    return str(exc) if isinstance(exc, StreamopsError) else f"{type(exc).__name__}: {exc}"


def unreadable(status: Any, error: str) -> None:
    """The resource's file cannot be read back: its ``Valid`` condition says why."""
    status.conditions = set_condition(status.conditions, "Valid", False, "Unreadable", error)
    status.message = error[:2000]


def readable(status: Any) -> None:
    """The resource's file was read: a ``Valid`` condition that said otherwise is cleared."""
    valid = next((c for c in status.conditions if c.type == "Valid"), None)
    if valid is not None and valid.status != "True":
        status.conditions = set_condition(status.conditions, "Valid", True, "Readable",
                                          "the resource's file was read")  # fmt: skip


def outcome(status: DeploymentStatus, applied: Applied, record: InFlight,
            done: act.Outcome) -> None:  # fmt: skip
    """``done``, the outcome of ``record``'s action, recorded against ``record.generation``."""
    dep, now, gen = applied.resource, time.time(), record.generation
    assert isinstance(dep, Deployment)
    status.observed_generation = max(status.observed_generation, gen)
    status.message = done.message
    status.last_action = {"action": record.action, "generation": gen,
                          "seconds": round(now - record.started_at, 2), **done.times}  # fmt: skip
    status.conditions = set_condition(status.conditions, "Progressing", False, record.action,
                                      done.message)  # fmt: skip
    result = "blocked" if done.blocked_plan is not None else "failed" if done.failed else "done"
    status.outcomes = [*status.outcomes, ActionOutcome(
        generation=gen, action=record.action, result=result, at=now,
        message=(done.failed or done.message)[:2000])][-OUTCOMES_KEPT:]  # fmt: skip
    if (
        done.savepoint
        and done.savepoint_kind
        and not any(r.name == done.savepoint for r in status.savepoint_history)
    ):
        status.savepoint_history.append(
            SavepointRecord(name=done.savepoint, kind=done.savepoint_kind, at=now)
        )  # type: ignore[arg-type]
    if done.blocked_plan is not None:
        status.blocked = Blocked(generation=gen, plan=done.blocked_plan)
        status.conditions = set_condition(status.conditions, "UpgradeBlocked", True,
                                          "PlanRefused", done.blocked_plan)  # fmt: skip
        status.phase = "Running"
        return
    if done.failed is not None:
        prev = status.failed
        again = prev is not None and (prev.generation, prev.action) == (gen, record.action)
        status.failed = FailedAction(generation=gen, action=record.action,
                                     message=done.failed[:2000], at=now,
                                     count=prev.count + 1 if again and prev else 1)  # fmt: skip
        status.conditions = set_condition(status.conditions, "Ready", False, "ActionFailed",
                                          f"{record.action}: {done.failed[:2000]}")  # fmt: skip
        return
    status.failed = None
    if done.driver:
        status.driver, status.submission_time, status.completion_time = done.driver, now, None
        status.version = str(record.detail.get("spec", {}).get("version") or status.version)
    if record.action in ("deploy", "upgrade", "restart-last-checkpoint", "restart-savepoint"):
        status.phase = "Running"
        status.suspended = status.cancelled = None
        if status.restart_nonce is None or record.action == "restart-savepoint":
            status.restart_nonce = dep.restart_nonce
    if record.action == "upgrade":
        status.blocked = None
        status.conditions = set_condition(status.conditions, "UpgradeBlocked", False,
                                          "Upgraded", done.message)  # fmt: skip
    if record.action == "suspend":
        status.phase, status.completion_time, status.cancelled = "Suspended", now, None
        status.suspended = Suspended(savepoint=done.savepoint,
                                     cause=str(record.detail.get("cause") or "suspended"),
                                     at=now, spec=record.detail.get("spec_ran"))  # fmt: skip
    if record.action == "periodic-savepoint":
        status.last_periodic = now
    if record.action == "prune":
        pruned = set(record.detail.get("pruned", []))
        status.savepoint_history = [r for r in status.savepoint_history if r.name not in pruned]
    status.conditions = set_condition(status.conditions, "Ready",
                                      status.phase == "Running" and dep.state == "running",
                                      status.phase, done.message)  # fmt: skip


def observed(status: DeploymentStatus, applied: Applied, job: JobSeen, action: Action) -> None:
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
