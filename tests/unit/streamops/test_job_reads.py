"""The read side of the jobs (:mod:`streamops.job_reads`): a job's view built from a given
master document and the state root, with no registry and no call to the master.

The state root is real, in a temporary directory; the master's document is a dict shaped like
Spark's ``/json/``, and asking a master fails the test.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from support.master_doc import running_drivers_doc as master_doc

from streamops.cluster.client import DriverInfo, MasterClient
from streamops.exceptions import UnsafeNameError
from streamops.job_reads import standby_drivers, submitted_at, view_of
from streamops.settings import Settings
from streamops.state.layout import append_jsonl, write_json_atomic
from streamops_contract.state import lease

JOB = "fleet-pings"




@pytest.fixture
def settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Settings:
    def no_master(_client: MasterClient) -> dict[str, Any]:
        raise AssertionError("the read side asked the master")

    monkeypatch.setattr(MasterClient, "state", no_master)
    settings = Settings.from_env({}, state_root=str(tmp_path / "state"))
    append_jsonl(settings.layout.submissions_file(JOB),
                 {"event": "submitted", "driver_id": "driver-1", "version": "1",
                  "at": 1000.0})  # fmt: skip
    write_json_atomic(settings.layout.status_file(JOB), {
        "job": JOB, "state": "RUNNING", "driver_id": "driver-1", "version": "1",
        "started_at": time.time() - 50, "stages": {}})  # fmt: skip
    return settings


def test_a_driver_running_in_the_document_with_its_status_is_a_live_view(
    settings: Settings,
) -> None:
    view = view_of(settings, JOB, master_doc("driver-1"))
    assert (view.is_live, view.state, view.driver_id) == (True, "RUNNING", "driver-1")
    assert (view.driver_state, view.version, view.standby) == ("RUNNING", "1", None)
    assert view.worker_address == "127.0.0.1:40123"


def test_a_document_without_the_driver_shows_the_job_not_live(settings: Settings) -> None:
    view = view_of(settings, JOB, master_doc("driver-9"))
    assert (view.is_live, view.driver_id, view.driver_state) == (False, None, None)


def test_no_document_is_the_state_root_view_live_while_the_lease_is_fresh(
    settings: Settings,
) -> None:
    view = view_of(settings, JOB, None)
    assert (view.is_live, view.driver_id) == (False, None)
    assert view.state == "NOT RUNNING (no lease, last RUNNING)"
    lease.acquire(settings.layout, JOB, "driver-1")
    view = view_of(settings, JOB, None)
    assert (view.is_live, view.state, view.driver_id) == (True, "RUNNING", "driver-1")
    assert (view.driver_state, view.worker) == (None, None)


def test_an_unsafe_name_is_refused(settings: Settings) -> None:
    with pytest.raises(UnsafeNameError):
        view_of(settings, "../etc", None)


def test_the_records_read(settings: Settings) -> None:
    assert submitted_at(settings, JOB, "driver-1") == 1000.0
    assert submitted_at(settings, JOB, "driver-2") is None
    subs = [{"event": "submitted", "driver_id": "driver-2", "hot_standby": True}]
    active = [DriverInfo.from_json(d) for d in master_doc("driver-1", "driver-2")["activedrivers"]]
    assert standby_drivers(settings, JOB, subs, active) == {"driver-2"}
    assert standby_drivers(settings, JOB, subs, active[:1]) == set()
