"""The status recorded beside each resource: what people read (``streamops get``, the
dashboard) and what the next decision starts from.

A deployment's status: its phase, the job's driver and version with their times, the
generation last reconciled, conditions (type, status, reason, message, last transition, as
Kubernetes has them), the savepoint history, and the facts the decision needs: the savepoint a
suspend left (with the spec that ran), a cancel by a savepoint request, an upgrade the plan
refused, the last failed action, the restart nonce last honoured, and the outcome of the last
actions, each against the generation it ran for (a resumed action may serve an older one).
"""

from __future__ import annotations

import time
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Phase = Literal["Pending", "Deploying", "Running", "Upgrading", "Suspending", "Suspended",
                "Cancelled", "Restarting", "Failed", "Deleting"]  # fmt: skip
RequestState = Literal["Pending", "InProgress", "Exported", "Failed"]


class Condition(BaseModel):
    model_config = ConfigDict(extra="ignore")

    type: str
    status: Literal["True", "False", "Unknown"]
    reason: str = ""
    message: str = ""
    last_transition: float = Field(default_factory=time.time)


class SavepointRecord(BaseModel):
    """A savepoint the reconcile took for a deployment (its history, which the schedule
    prunes)."""

    model_config = ConfigDict(extra="ignore")

    name: str
    kind: Literal["periodic", "suspend", "upgrade", "restart", "delete"]
    at: float


class Suspended(BaseModel):
    model_config = ConfigDict(extra="ignore")

    savepoint: str | None  # None: the job was not running when it was suspended
    cause: str
    at: float
    spec: dict[str, Any] | None = None  # the spec that ran: a resume starts it again


class Cancelled(BaseModel):
    model_config = ConfigDict(extra="ignore")

    request: str
    savepoint: str
    generation: int  # the deployment's generation then: a later one starts the job again
    at: float


class Blocked(BaseModel):
    model_config = ConfigDict(extra="ignore")

    generation: int
    plan: str


class FailedAction(BaseModel):
    model_config = ConfigDict(extra="ignore")

    generation: int
    action: str
    message: str
    at: float
    count: int = 1


OUTCOMES_KEPT = 20


class ActionOutcome(BaseModel):
    """How an action ended, against the generation it ran for."""

    model_config = ConfigDict(extra="ignore")

    generation: int
    action: str
    result: Literal["done", "failed", "blocked"]
    message: str = ""
    at: float


class DeploymentStatus(BaseModel):
    model_config = ConfigDict(extra="ignore")

    phase: Phase = "Pending"
    driver: str | None = None
    version: str | None = None
    submission_time: float | None = None
    completion_time: float | None = None
    observed_generation: int = 0
    conditions: list[Condition] = Field(default_factory=list)
    savepoint_history: list[SavepointRecord] = Field(default_factory=list)
    restart_nonce: int | None = None
    suspended: Suspended | None = None
    cancelled: Cancelled | None = None
    blocked: Blocked | None = None
    failed: FailedAction | None = None
    last_periodic: float | None = None
    last_action: dict[str, Any] = Field(default_factory=dict)  # action, seconds, its times
    outcomes: list[ActionOutcome] = Field(default_factory=list)  # the last OUTCOMES_KEPT
    message: str = ""
    updated_at: float | None = None

    def condition(self, type_: str) -> Condition | None:
        return next((c for c in self.conditions if c.type == type_), None)


class RequestStatus(BaseModel):
    model_config = ConfigDict(extra="ignore")

    state: RequestState = "Pending"
    creation_time: float | None = None  # the savepoint's
    message: str = ""
    observed_generation: int = 0
    conditions: list[Condition] = Field(default_factory=list)
    updated_at: float | None = None

    def condition(self, type_: str) -> Condition | None:
        return next((c for c in self.conditions if c.type == type_), None)


def set_condition(
    conditions: list[Condition], type_: str, status: bool | None, reason: str = "",
    message: str = "", now: float | None = None,
) -> list[Condition]:  # fmt: skip
    """``conditions`` with ``type_`` set; its last transition moves only when its status does."""
    value: Literal["True", "False", "Unknown"] = (
        "Unknown" if status is None else "True" if status else "False"
    )
    now = time.time() if now is None else now
    out, found = [], False
    for c in conditions:
        if c.type == type_:
            found = True
            at = c.last_transition if c.status == value else now
            c = Condition(type=type_, status=value, reason=reason, message=message,
                          last_transition=at)  # fmt: skip
        out.append(c)
    if not found:
        out.append(Condition(type=type_, status=value, reason=reason, message=message,
                             last_transition=now))  # fmt: skip
    return out
