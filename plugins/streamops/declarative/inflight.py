"""What action the reconcile has in flight for each resource: an intent like the procedures'
(:mod:`streamops.procedures.intent_store`, kind ``reconcile`` of
:mod:`streamops.state.intents`: ``<root>/declarative/inflight/<Kind>-<name>.json``), so every
reader of intents (health) sees it with theirs.

The record is written before the action starts (phase ``acting``) and updated by its steps
(e.g. the savepoint with cancel's :class:`SavepointCancel`, in ``detail``, its phase the
record's), and closed once the action ended: ``done``; ``failed`` when it failed having
changed nothing (kept, with its failure, for health); ``ended`` when it failed having changed
the job (the resource's status says how, the procedure underneath keeps its own intent). A
pass killed in between leaves it unfinished: the next pass resumes that action before
deciding anything else, and the procedure underneath resumes from its own intent (owned by
``InFlight.owner``: no second cancel, no second submission). A record of the layout before
(no phase) is read as an action in flight.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from streamops.procedures.intent_store import IntentStore, StepRecord
from streamops.state import intents
from streamops.state.declarative.store import Store

ACTING = "acting"
ENDED = "ended"  # failed having changed the job: the status and the procedure's intent say how


@dataclass
class InFlight(StepRecord):
    FINISHED = ("done", ENDED)

    kind: str  # the resource's kind
    name: str  # the resource's name
    action: str  # decide.ActionKind's value
    generation: int  # the resource's generation the action serves
    detail: dict[str, Any] = field(default_factory=dict)  # the action's arguments and progress
    started_at: float = field(default_factory=time.time)
    updated_at: float = field(default_factory=time.time)
    owner: str = ""  # the owner the procedures record in their intents: this action alone

    def __post_init__(self) -> None:
        if not self.owner:
            self.owner = intents.reconcile_owner(self.kind, self.name, self.started_at)

    @property
    def key(self) -> str:
        return intents.resource_key(self.kind, self.name)


STORE = IntentStore(InFlight, "reconcile",
                    describe=lambda r: f"reconcile {r.action} of {r.kind}/{r.name}")  # fmt: skip


def load(store: Store, kind: str, name: str) -> InFlight | None:
    """The action in flight for the resource (one that ended: none)."""
    record = STORE.load(store, intents.resource_key(kind, name))
    return None if record is None or record.finished else record


def begin(store: Store, record: InFlight) -> None:
    """Record the action before it starts: a pass killed from now on resumes it."""
    record.updated_at = time.time()
    STORE.save(store, record, ACTING, action=record.action, generation=record.generation)


def save(store: Store, record: InFlight) -> None:
    """The action's progress (its ``detail``; the phase of its savepoint, if it takes one)."""
    record.updated_at = time.time()
    STORE.save(store, record, str(record.detail.get("phase") or ACTING))


def done(store: Store, record: InFlight) -> None:
    record.updated_at = time.time()
    STORE.done(store, record, record.action, "done")


def failed(store: Store, record: InFlight, failure: str) -> bool:
    """Close the action that failed: as failed when it changed nothing (whether it did is
    returned), else as ended."""
    record.updated_at = time.time()
    step = unchanged_step(store, record)
    if step is not None:
        STORE.fail(store, record, step, failure)
        return True
    record.failure = failure
    STORE.save(store, record, ENDED, failure=failure)
    return False


def unchanged_step(store: Store, record: InFlight) -> str | None:
    """The step at which the failed action stopped if it changed nothing, else ``None``:
    every procedure it ran (the intents it owns) closed as failed having changed nothing, or
    it ran none and sent no savepoint request."""
    owned = [seen for seen in intents.owned_by(store.layout, record.owner)
             if seen.kind.name != STORE.name]  # fmt: skip
    if owned:
        if all(seen.closed_failed for seen in owned):
            return ", ".join(f"{s.kind.title} {s.failed_step or s.phase}" for s in owned)
        return None
    cancel = record.detail.get("cancel") or {}
    if cancel.get("request") or "request" in (cancel.get("done") or []):
        return None
    return record.action
