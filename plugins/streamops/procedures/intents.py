"""Intent records: what a procedure on a job is about to do, written before it does it.

``jobs/<job>/<procedure>.json`` holds the last phase (``savepoint-with-cancel``,
``start-new-version``, ``rollback``, ``done``, ...) and its details, so a retried step (an
Airflow task retry, a re-run CLI command) resumes instead of repeating a destructive step.
"""

from __future__ import annotations

import logging
import time
from typing import Any, Protocol, TypeVar

from streamops.jobs import JobRegistry, read_submissions
from streamops.settings import Settings
from streamops.state.layout import read_json, write_json_atomic

log = logging.getLogger("streamops.procedures.intents")


class StepIntent(Protocol):
    """A typed intent whose steps resume (``UpgradeIntent``, ``SavepointRestart``)."""

    owner: str
    phase: str
    done: list[str]

    @property
    def finished(self) -> bool: ...


Intent = TypeVar("Intent", bound=StepIntent)


def resume_step(
    intent: Intent | None, job: str, owner: str, step: str, *, procedure: str, first: str,
    error: type[Exception],
) -> tuple[Intent, bool]:  # fmt: skip
    """``owner``'s ``procedure`` of ``job`` in progress, and whether ``step`` is still to do
    (done by a previous attempt: not again); raises ``error`` when there is none, it is
    another owner's, or it is finished (``first``: the step that records one)."""
    if intent is None:
        raise error(f"no {procedure} of {job} in progress; {first} one first")
    if intent.owner != owner:
        raise error(f"the {procedure} of {job} (phase {intent.phase}) is {intent.owner}'s, not "
                    f"{owner}'s")  # fmt: skip
    if step in intent.done:
        log.info("%s of %s: %s was done by a previous attempt", procedure, job,
                 step.replace("_", " "))  # fmt: skip
        return intent, False
    if intent.finished:
        raise error(f"the {procedure} of {job} is {intent.phase}; {first} another one")
    return intent, True


def record_intent(
    settings: Settings, job: str, procedure: str, phase: str, **fields: Any
) -> dict[str, Any]:
    """Record that ``procedure`` of ``job`` is about to do ``phase`` (before doing it)."""
    record = {"phase": phase, "at": time.time(), **fields}
    write_json_atomic(settings.layout.intent_record(job, procedure), record)
    log.info("%s of %s: %s %s", procedure, job, phase,
             " ".join(f"{k}={v}" for k, v in fields.items() if k != "reason"))  # fmt: skip
    return record


def read_intent(settings: Settings, job: str, procedure: str) -> dict[str, Any]:
    return read_json(settings.layout.intent_record(job, procedure)) or {}


def already_started(
    settings: Settings, job: str, procedure: str, phase: str, **match: Any
) -> str | None:
    """The live driver a previous attempt of ``phase`` submitted, if any (a retried step
    resumes instead of submitting twice)."""
    intent = read_intent(settings, job, procedure)
    if intent.get("phase") != phase or any(intent.get(k) != v for k, v in match.items()):
        return None
    if not JobRegistry(settings).view(job).is_live:
        return None
    subs = read_submissions(settings.layout.submissions_file(job))
    since = float(intent.get("at", 0))
    recent = [s for s in subs if s.get("event") == "submitted" and s.get("at", 0) >= since]
    if not recent:
        return None
    driver = str(recent[-1]["driver_id"])
    log.info("%s of %s: %s already done by a previous attempt (driver %s); resuming",
             procedure, job, phase, driver)  # fmt: skip
    return driver
