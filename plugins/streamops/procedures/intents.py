"""What every procedure's intent shares beside its store
(:mod:`streamops.procedures.intent_store`): reading a record as it is on disk, and finding
the driver a previous attempt submitted (a retried step resumes instead of submitting
twice)."""

from __future__ import annotations

import logging
from typing import Any

from streamops.job_reads import read_submissions
from streamops.settings import Settings
from streamops.state.layout import read_json
from streamops.world.operations import Operations

log = logging.getLogger("streamops.procedures.intents")


def read_intent(settings: Settings | Operations, job: str, procedure: str) -> dict[str, Any]:
    """``jobs/<job>/<procedure>.json`` as it is on disk (``{}``: none)."""
    data = read_json(settings.layout.intent_record(job, procedure))
    return data if isinstance(data, dict) else {}


def already_started(ops: Operations, job: str, *, since: float) -> str | None:
    """The live driver of ``job`` last submitted since ``since`` (when the intent recorded
    the start it is about to make), if any: the submission of a previous attempt that
    crashed before it could record it."""
    if not ops.registry.view(job).is_live:
        return None
    subs = read_submissions(ops.layout.submissions_file(job))
    recent = [s for s in subs if s.get("event") == "submitted" and s.get("at", 0) >= since
              and not s.get("standby") and not s.get("hot_standby")]  # fmt: skip
    if not recent:
        return None
    driver = str(recent[-1]["driver_id"])
    log.info("job %s: driver %s was submitted by a previous attempt; resuming", job, driver)
    return driver
