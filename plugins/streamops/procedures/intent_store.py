"""The typed intent store every procedure keeps its progress in.

An intent is a dataclass of :class:`StepRecord` (what the procedure is about to do, the
steps done, who owns it), written before each destructive step and after it, so a retried
step (an Airflow task retry, a re-run CLI command) resumes instead of repeating harm. One
:class:`IntentStore` per procedure says where its record lives (``jobs/<job>/<name>.json``,
or ``<state>/cluster/intents/<name>.json`` for the cluster's) and does the rest: ``load``
(an older layout on disk is migrated), ``save``, ``resume`` (the owner's intent and whether
a step is still to do), ``done``, ``owned`` and ``fail`` (a step that failed having changed
nothing closes its intent as failed: finished, nothing to resume, the failure kept for health).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, ClassVar, Generic, Protocol, TypeVar

from streamops.exceptions import StreamopsError
from streamops.state.layout import StateLayout, read_json, write_json_atomic

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
    FAILED: ClassVar[str] = "failed"  # closed by a step that failed having changed nothing

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

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


Intent = TypeVar("Intent", bound=StepRecord)
Record = TypeVar("Record")
Migrate = Callable[[dict[str, Any], str | None], dict[str, Any] | None]


def from_dict(kind: type[Record], data: dict[str, Any]) -> Record:
    """``kind`` from a record, ignoring the keys it does not know."""
    names = {f.name for f in fields(kind)}  # type: ignore[arg-type]
    return kind(**{k: v for k, v in data.items() if k in names})


class IntentStore(Generic[Intent]):
    """Where ``kind``'s intents live, and how a step resumes from one.

    ``name``: the record's file name (``upgrade`` → ``jobs/<job>/upgrade.json``; with
    ``cluster``, ``<state>/cluster/intents/<name>.json``); ``title``: the procedure in
    messages; ``first``: the step that records one; ``error``: what a step that cannot go
    on raises; ``migrate``: an older layout's record → this one's (``None``: not one of
    ours); ``history``: also append every save to the intent's ``steps``."""

    def __init__(
        self, kind: type[Intent], name: str, *, title: str | None = None, first: str = "begin",
        error: type[StreamopsError] = StreamopsError, cluster: bool = False,
        migrate: Migrate | None = None, describe: Callable[[Intent], str] | None = None,
        history: bool = False,
    ) -> None:  # fmt: skip
        self.kind, self.name, self.title = kind, name, title or name
        self.first, self.error, self.cluster = first, error, cluster
        self.migrate, self.history = migrate, history
        self.describe = describe or (
            lambda intent: f"{self.title} of {_key(intent) or 'the cluster'}")

    def path(self, layout: StateLayout, key: str | None = None) -> Path:
        if self.cluster:
            return layout.intent_file(self.name)
        assert key is not None, f"the {self.title}'s intent is a job's"
        return layout.intent_record(key, self.name)

    def read(self, world: HasLayout, key: str | None = None) -> dict[str, Any]:
        """The record as it is on disk (``{}``: none)."""
        data = read_json(self.path(world.layout, key))
        return data if isinstance(data, dict) else {}

    def load(self, world: HasLayout, key: str | None = None) -> Intent | None:
        data = self.read(world, key)
        if data and self.migrate is not None:
            data = self.migrate(data, key) or {}
        return from_dict(self.kind, data) if data else None

    def save(self, world: HasLayout, intent: Intent, phase: str, **detail: Any) -> None:
        intent.phase, intent.at = phase, _now(world)
        if self.history:
            intent.steps.append({"phase": phase, "at": intent.at, **detail})
        write_json_atomic(self.path(world.layout, _key(intent)), intent.to_dict())
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


def _key(intent: StepRecord) -> str | None:
    return getattr(intent, "job", None)
