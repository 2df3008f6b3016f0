"""The typed intent store every procedure keeps its progress in.

An intent is a dataclass of :class:`StepRecord` (what the procedure is about to do, the
steps done, who owns it), written before each destructive step and after it, so a retried
step (an Airflow task retry, a re-run CLI command) resumes instead of repeating harm. One
:class:`IntentStore` per kind of intent (registered in :mod:`streamops.state.intents`, which
says where its records live and how an older layout reads: any reader lists them from there)
does the rest: ``load`` (an older layout on disk is migrated), ``save``, ``resume`` (the
owner's intent and whether a step is still to do), ``done``, ``owned`` and ``fail`` (a step
that failed having changed nothing closes its intent as failed: finished, nothing to resume,
the failure kept for health).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, ClassVar, Generic, Protocol, TypeVar

from streamops.exceptions import StreamopsError
from streamops.state import intents
from streamops.state.layout import StateLayout, write_json_atomic

log = logging.getLogger("streamops.procedures.intents")


class HasLayout(Protocol):
    """Settings, or the operations port: what knows the state root."""

    @property
    def layout(self) -> StateLayout: ...


@dataclass(kw_only=True)
class StepLog:
    """The steps done of a procedure (or of a part of one), and when each was done."""

    done: list[str] = field(default_factory=list)
    times: dict[str, float] = field(default_factory=dict)

    def mark(self, step: str, now: float | None = None) -> None:
        if step not in self.done:
            self.done.append(step)
        self.times[step] = time.time() if now is None else now


@dataclass(kw_only=True)
class StepRecord(StepLog):
    """A procedure's intent: its phase, when it was recorded, the steps done. A subclass
    adds ``owner`` (``cli``, ``airflow:<dag>/<run>``, ...: who may resume it) and what the
    procedure needs by value."""

    FINISHED: ClassVar[tuple[str, ...]] = ("done",)
    FAILED: ClassVar[str] = intents.FAILED  # closed by a step that failed having changed nothing

    phase: str = "new"
    at: float = field(default_factory=time.time)  # when ``phase`` was recorded
    failed_step: str | None = None  # closed as failed: the step, and what it raised
    failure: str | None = None

    @property
    def finished(self) -> bool:
        return self.phase in self.FINISHED or self.phase == self.FAILED

    @property
    def closed_failed(self) -> bool:
        return self.phase == self.FAILED

    @property
    def key(self) -> str | None:
        """Whose record it is: the job (``None``: the cluster's)."""
        return getattr(self, "job", None)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


Intent = TypeVar("Intent", bound=StepRecord)
Record = TypeVar("Record")


def from_dict(kind: type[Record], data: dict[str, Any]) -> Record:
    """``kind`` from a record, ignoring the keys it does not know."""
    names = {f.name for f in fields(kind)}  # type: ignore[arg-type]
    return kind(**{k: v for k, v in data.items() if k in names})


class IntentStore(Generic[Intent]):
    """Where ``kind``'s intents live, and how a step resumes from one.

    ``name``: the kind registered in :data:`streamops.state.intents.KINDS` (its scope, title,
    first step, finished phases and migration of an older layout); ``error``: what a step
    that cannot go on raises; ``history``: also append every save to the intent's ``steps``."""

    def __init__(
        self, kind: type[Intent], name: str, *, error: type[StreamopsError] = StreamopsError,
        describe: Callable[[Intent], str] | None = None, history: bool = False,
    ) -> None:  # fmt: skip
        registered = intents.KINDS[name]
        if set(kind.FINISHED) != set(registered.finished):
            raise AssertionError(f"{kind.__name__}.FINISHED {kind.FINISHED} is not the "
                                 f"registered {name} intent's {registered.finished}")
        self.kind, self.name, self.registered = kind, name, registered
        self.title, self.first = registered.title, registered.first
        self.error, self.history = error, history
        self.describe = describe or (
            lambda intent: f"{self.title} of {intent.key or 'the cluster'}")

    def path(self, layout: StateLayout, key: str | None = None) -> Path:
        return self.registered.path(layout, key)

    def read(self, world: HasLayout, key: str | None = None) -> dict[str, Any]:
        """The record as it is on disk, an older layout migrated (``{}``: none)."""
        return intents.read(world.layout, self.registered, key)

    def load(self, world: HasLayout, key: str | None = None) -> Intent | None:
        data = self.read(world, key)
        return from_dict(self.kind, data) if data else None

    def save(self, world: HasLayout, intent: Intent, phase: str, **detail: Any) -> None:
        intent.phase, intent.at = phase, _now(world)
        if self.history:
            intent.steps.append({"phase": phase, "at": intent.at, **detail})
        write_json_atomic(self.path(world.layout, intent.key), intent.to_dict())
        extra = ", ".join(f"{k} {v}" for k, v in detail.items() if k not in ("reason", "failure"))
        log.info("%s: %s%s", self.describe(intent), phase, f" ({extra})" if extra else "")

    def done(self, world: HasLayout, intent: Intent, step: str, phase: str, **detail: Any) -> None:
        intent.mark(step, _now(world))
        self.save(world, intent, phase, **detail)

    def fail(self, world: HasLayout, intent: Intent, step: str, failure: str) -> None:
        """Close ``intent`` as failed: its step ``step`` failed having changed nothing, so
        there is nothing to resume (a new run of the procedure begins afresh)."""
        intent.failed_step, intent.failure = step, failure
        self.save(world, intent, intent.FAILED, step=step, failure=failure)
        first = failure.splitlines()[0] if failure else "?"
        log.warning("%s failed at %s, having changed nothing: %s", self.describe(intent),
                    step.replace("_", " "), first)  # fmt: skip

    def resume(
        self, world: HasLayout, key: str | None, owner: str, step: str
    ) -> tuple[Intent, bool]:
        """``owner``'s intent in progress, and whether ``step`` is still to do (done by a
        previous attempt: not again); raises ``error`` when there is none, it is another
        owner's, or it is finished."""
        intent = self.load(world, key)
        what = f"{self.title} of {key}" if key else self.title
        if intent is None:
            raise self.error(f"no {what} in progress; {self.first} one first")
        holder = intent.owner
        if holder != owner:
            raise self.error(f"the {what} (phase {intent.phase}) is {holder}'s, not {owner}'s")
        if step in intent.done:
            log.info("%s: %s was done by a previous attempt", what, step.replace("_", " "))
            return intent, False
        if intent.finished:
            raise self.error(f"the {what} is {intent.phase}; {self.first} another one")
        return intent, True

    def owned(self, world: HasLayout, key: str | None, owner: str | None = None) -> Intent:
        """The unfinished intent (of ``owner``, when given), else raise ``error``."""
        intent = self.load(world, key)
        if intent is None or intent.finished or (owner and intent.owner != owner):
            who = f" of {owner}" if owner else ""
            raise self.error(f"no {self.title}{who} in progress; {self.first} one first")
        return intent

    def finished_of(self, world: HasLayout, key: str | None, owner: str) -> Intent | None:
        """``owner``'s intent if it is finished (a retried task after it changes nothing)."""
        intent = self.load(world, key)
        if intent is not None and intent.finished and intent.owner == owner:
            return intent
        return None


def _now(world: HasLayout) -> float:
    """The time by the port's clock (the settings alone: the system's)."""
    clock = getattr(world, "clock", None)
    return float(clock.time()) if clock is not None else time.time()
