"""A lease holder cut off by the network still heartbeats through the shared state root; the
driver the master relaunched in its place fences it at once when the master's recovery files
say the holder is no longer one of its drivers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from spark_jobs.runtime.fencing import LeaseFence
from streamops.state.job_status import JobStatus
from streamops.state.layout import StateLayout
from streamops_contract.state import lease


class Board:
    def __init__(self, driver_id: str | None) -> None:
        self.ident: dict[str, Any] = {"driver_id": driver_id, "host": "h", "pid": 1,
                                      "app_id": None}  # fmt: skip

    def snapshot(self) -> JobStatus:
        return JobStatus(**self.ident)


OLD = "driver-20261127040000-0000"
NEW = "driver-20261127040100-0001"


def _persist(layout: StateLayout, *drivers: str) -> None:
    layout.recovery_dir.mkdir(parents=True, exist_ok=True)
    for d in drivers:
        (layout.recovery_dir / f"driver_{d}").write_bytes(b"x")


def _held_elsewhere(layout: StateLayout, monkeypatch: pytest.MonkeyPatch) -> lease.Lease:
    monkeypatch.setenv("STREAMOPS_NODE_HOST", "10.0.0.11")
    held = lease.acquire(layout, "job", OLD)  # fresh: its host heartbeats on
    monkeypatch.setenv("STREAMOPS_NODE_HOST", "10.0.0.12")
    return held


def test_a_relaunched_driver_fences_the_holder_the_master_dropped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    layout = StateLayout.at(tmp_path)
    held = _held_elsewhere(layout, monkeypatch)
    _persist(layout, NEW)  # the master relaunched OLD as NEW: OLD's file is gone
    fence = LeaseFence(layout, "job", Board(NEW))  # type: ignore[arg-type]
    fence.acquire(wait=0)
    assert fence.lease is not None and fence.lease.epoch == held.epoch + 1
    assert fence.lease.host == "10.0.0.12"
    with pytest.raises(lease.Fenced, match="lost its lease"):
        lease.heartbeat(layout, held)  # the cut-off holder's next heartbeat stands it down


def test_a_relaunch_finding_another_live_driver_holding_the_job_exits_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The defect: the node of a driver idling after its handover died; the master relaunched
    it under a new id while its successor (a driver the master keeps) held the lease. The
    relaunch waited 30 s for that lease with a driver's cores the successor's executor needed
    (a warm cluster restart's job then took 60 s to commit again)."""
    import time

    layout = StateLayout.at(tmp_path)
    _held_elsewhere(layout, monkeypatch)
    _persist(layout, OLD, NEW)  # both are the master's drivers: OLD is no dead predecessor
    fence = LeaseFence(layout, "job", Board(NEW))  # type: ignore[arg-type]
    t0 = time.monotonic()
    with pytest.raises(lease.Fenced, match="already run by driver"):
        fence.acquire(wait=30)
    assert time.monotonic() - t0 < 5


@pytest.mark.parametrize(
    ("persisted", "own"),
    [((), NEW),  # no master persists here (or this driver is not one of its)
     ((NEW,), None)],  # this driver is not a cluster driver
)  # fmt: skip
def test_a_holder_the_master_keeps_is_waited_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, persisted: tuple[str, ...],
    own: str | None,
) -> None:  # fmt: skip
    layout = StateLayout.at(tmp_path)
    _held_elsewhere(layout, monkeypatch)
    _persist(layout, *persisted)
    fence = LeaseFence(layout, "job", Board(own))  # type: ignore[arg-type]
    with pytest.raises(lease.Fenced, match="already run by driver"):
        fence.acquire(wait=0)


def test_a_hot_jobs_relaunch_takes_over_a_holder_the_master_dropped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A hot job's relaunched driver does not stand behind a cut-off holder (it would never
    run): it takes the lease as the primary."""
    from spark_jobs.runtime.hot_roles import Role, take_role

    layout = StateLayout.at(tmp_path)
    held = _held_elsewhere(layout, monkeypatch)
    _persist(layout, NEW)
    role, claimed = take_role(layout, "job", "1", False, NEW, timeout=2, poll=0.05)
    assert role is Role.PRIMARY and claimed.epoch == held.epoch + 1
