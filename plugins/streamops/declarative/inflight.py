"""What action the reconcile has in flight for each resource: the reconcile's one piece of
persistence of its own (the procedures keep theirs in their intents).

The record is written before the action starts and updated by its steps (e.g. the savepoint
with cancel's :class:`SavepointCancel`), and removed once the action ended, done or failed.
A pass killed in between leaves it: the next pass resumes that action before deciding
anything else, and the procedure underneath resumes from its own intent (no second cancel,
no second submission).
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Any

from streamops.declarative.store import Store
from streamops.state.layout import read_json, write_json_atomic


@dataclass
class InFlight:
    kind: str  # the resource's kind
    name: str  # the resource's name
    action: str  # decide.ActionKind's value
    generation: int  # the resource's generation the action serves
    detail: dict[str, Any] = field(default_factory=dict)  # the action's arguments and progress
    started_at: float = field(default_factory=time.time)
    updated_at: float = field(default_factory=time.time)

    @property
    def owner(self) -> str:
        """The owner the procedures record in their intents: this action alone resumes them."""
        return f"reconcile:{self.kind}/{self.name}@{self.started_at:.3f}"


def load(store: Store, kind: str, name: str) -> InFlight | None:
    data = read_json(store.inflight_file(kind, name))
    return InFlight(**data) if data else None


def save(store: Store, record: InFlight) -> None:
    record.updated_at = time.time()
    write_json_atomic(store.inflight_file(record.kind, record.name), asdict(record))


def clear(store: Store, kind: str, name: str) -> None:
    store.inflight_file(kind, name).unlink(missing_ok=True)
