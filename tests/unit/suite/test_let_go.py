"""A test's job let go at its end (``support.integration.ended_driver``): a job that ended on
its own (its driver killed by the drill) still counts as declared until its end is recorded;
the view of a job that runs no more names no driver, so the end is the last submission's."""

from __future__ import annotations

from pathlib import Path

from support.integration import ended_driver

from streamops.health.gather import dormant_reason
from streamops.job_view import JobView
from streamops_contract.records import Cancellation, SubmissionRecord, append_record
from streamops_contract.state.layout import StateLayout

JOB = "fleet-health"


def view(live: bool, driver: str | None = None) -> JobView:
    return JobView(name=JOB, version="1", state="KILLED", is_live=live, driver_id=driver,
                   driver_state="KILLED", worker=None, last_batch_age=None,
                   input_rows_per_second=None, processed_rows_per_second=None)  # fmt: skip


def test_a_killed_job_is_recorded_as_ended_by_its_last_driver(tmp_path: Path) -> None:
    layout = StateLayout(tmp_path)
    subs = layout.submissions_file(JOB)
    subs.parent.mkdir(parents=True)
    append_record(subs, SubmissionRecord("driver-1", "1", {}))
    assert dormant_reason(layout, JOB) is None  # declared: health and admission count it
    assert ended_driver(layout, JOB, view(live=False)) == "driver-1"
    append_record(subs, Cancellation("driver-1"))
    assert dormant_reason(layout, JOB) is not None
    assert ended_driver(layout, JOB, view(live=False)) is None  # recorded once


def test_a_live_or_never_submitted_job_records_nothing(tmp_path: Path) -> None:
    layout = StateLayout(tmp_path)
    assert ended_driver(layout, JOB, view(live=False)) is None
    subs = layout.submissions_file(JOB)
    subs.parent.mkdir(parents=True)
    append_record(subs, SubmissionRecord("driver-2", "1", {}))
    assert ended_driver(layout, JOB, view(live=True, driver="driver-2")) is None
