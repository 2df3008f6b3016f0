from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from streamops.jobs import JobView
from streamops.settings import Settings
from streamops_airflow.exceptions import ProcedureFailed
from streamops_airflow.triggers import JobHealthyTrigger, health_outcome, health_verdict


def view(**changes: Any) -> JobView:
    status = {"state": "RUNNING", "driver_id": "driver-2", "stages": {"s": {"ready": True}}}
    fields: dict[str, Any] = dict(
        name="job", version="2", state="RUNNING", is_live=True, driver_id="driver-2",
        driver_state="RUNNING", worker=None, last_batch_age=1.0, input_rows_per_second=None,
        processed_rows_per_second=None, status=status,
    )  # fmt: skip
    fields.update(changes)
    return JobView(**fields)


def test_healthy_run_of_the_started_driver() -> None:
    assert health_verdict(view(), "driver-2")[0] == "healthy"
    assert health_verdict(view(), None)[0] == "healthy"


def test_a_started_driver_relaunched_is_a_failed_start() -> None:
    """A crashed driver relaunched by --supervise may look healthy (idle stages): not so."""
    relaunched = view(driver_id="driver-3", status={**view().status, "driver_id": "driver-3"})
    status, message = health_verdict(relaunched, "driver-2")
    assert status == "failed" and "relaunched (driver-3)" in message
    assert health_verdict(relaunched, None)[0] == "healthy"  # no start to watch: it is healthy
    relaunching = view(state="RELAUNCHING", driver_id=None, status={})
    assert health_verdict(relaunching, "driver-2")[0] == "failed"


def test_the_old_driver_handing_over_is_no_relaunch() -> None:
    """After an upgrade's savepoint the old driver idles (its sealed status still shown)
    until the new one runs: while the started driver is live too, keep waiting."""
    old_status = {"state": "STOPPED", "driver_id": "driver-1", "stages": {"s": {"ready": True}}}
    handing_over = view(state="STOPPED", driver_id="driver-1", status=old_status)
    assert health_verdict(handing_over, "driver-2", since_live=True) is None
    assert health_verdict(handing_over, "driver-2")[0] == "failed"  # driver-2 is gone
    # once the new driver writes its status the view follows it, the old one still listed
    status, message = health_verdict(view(), "driver-2", since_live=True)
    assert status == "healthy" and message.endswith("on driver driver-2")


def test_still_starting_keeps_waiting() -> None:
    starting = view(state="STARTING", status={"state": "STARTING", "driver_id": "driver-2",
                                              "stages": {"s": {"ready": False}}})  # fmt: skip
    assert health_verdict(starting, "driver-2") is None


def test_failed_on_start_and_ended_drivers_fail() -> None:
    crashed = view(status={"state": "FAILED", "driver_id": "driver-2", "error": "boom"})
    assert health_verdict(crashed, "driver-2") == (
        "failed", "job job failed on start (driver driver-2): boom"
    )
    ended = view(is_live=False, driver_id=None, driver_state="FAILED", status={})
    status, message = health_verdict(ended, "driver-2")
    assert status == "failed" and "ended FAILED" in message


def test_an_old_failure_does_not_fail_a_new_driver() -> None:
    old = view(state="STARTING", status={"state": "FAILED", "driver_id": "driver-1"})
    assert health_verdict(old, "driver-2") is None


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
