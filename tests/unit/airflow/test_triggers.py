"""The trigger's own behaviour: its serialization, and a master that never answers.

What a wait concludes about the job it observes (healthy, failed start, keep waiting) is
tested once for every wait, this trigger's included, in ``tests/unit/streamops/test_verdict.py``.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from streamops.settings import Settings
from streamops_airflow.exceptions import ProcedureFailed
from streamops_airflow.triggers import JobHealthyTrigger, health_outcome


def test_trigger_serializes_round_trip(tmp_path: Path) -> None:
    settings = Settings.from_env({}, state_root=str(tmp_path)).model_dump(mode="json")
    trigger = JobHealthyTrigger(job="job", settings=settings, timeout=60, since_driver="d-1")
    path, kwargs = trigger.serialize()
    assert path == "streamops_airflow.triggers.JobHealthyTrigger"
    again = JobHealthyTrigger(**kwargs)
    assert again.serialize() == (path, kwargs) and again.deadline == trigger.deadline


def test_trigger_times_out_with_a_message_when_the_master_is_unreachable(
    tmp_path: Path, free_port
) -> None:
    settings = Settings.from_env({}, state_root=str(tmp_path), master_webui_port=free_port())
    trigger = JobHealthyTrigger(job="job", settings=settings.model_dump(mode="json"),
                                timeout=1.5, poll_interval=0.2)  # fmt: skip

    async def first_event() -> dict[str, Any]:
        async for event in trigger.run():
            return event.payload
        raise AssertionError("no event")

    started = time.monotonic()
    event = asyncio.run(first_event())
    assert event["status"] == "timeout" and "not healthy after 2s (unseen)" in event["message"]
    assert time.monotonic() - started < 30
    with pytest.raises(ProcedureFailed, match="not healthy after"):
        health_outcome(event)
    assert health_outcome({"status": "healthy", "driver_id": "d-9"}) == "d-9"
