"""Intent records: what a procedure on a job is about to do, written before it does it.

``jobs/<job>/<procedure>.json`` holds the last phase (``savepoint-with-cancel``,
``start-new-version``, ``rollback``, ``done``, ...) and its details, so a retried step (an
Airflow task retry, a re-run CLI command) resumes instead of repeating a destructive step.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from streamops.layout import read_json, write_json_atomic
from streamops.settings import Settings

log = logging.getLogger("streamops.intents")


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
