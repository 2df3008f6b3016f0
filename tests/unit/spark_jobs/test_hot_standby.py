"""A hot standby's watch over the job's lease (real lease files, real flock, real processes).

The standby stands behind one lease (holder and epoch): it waits while that holder lives,
takes the lease when the holder dies without giving it up, and is dismissed when the lease
is given up cleanly or passes to anyone else.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any, cast

import pytest

from spark_jobs.runtime import hot_roles, hot_standby
from streamops.state.job_status import JobStatus
from streamops.state.layout import StateLayout, write_json_atomic
from streamops_contract.state import lease

JOB = "fleet-pings"


class Board:
    def __init__(self) -> None:
        self.fields: dict[str, Any] = {"app_id": "app-2"}

    def snapshot(self) -> JobStatus:
        return JobStatus(**self.fields)

    def identify(self, **fields: Any) -> None:
        self.fields.update(fields)


class Ctx:
    """What ``watch`` uses of a JobContext."""

    def __init__(self, layout: StateLayout) -> None:
        self.layout, self.job, self.holder = layout, JOB, "driver-2"
        self.board = Board()
        self.lease: lease.Lease | None = None


@pytest.fixture
def layout(tmp_path: Path) -> StateLayout:
    return StateLayout.at(tmp_path)


def dead_pid() -> int:
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    return int(done.stdout)


def watch_in_thread(ctx: Ctx, behind: lease.Lease) -> tuple[threading.Thread, list[object]]:
    outcome: list[object] = []

    def run() -> None:
        try:
            hot_standby.watch(cast(Any, ctx), behind, poll=0.01)
            outcome.append("took over")
        except hot_standby.Dismissed as exc:
            outcome.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, outcome


def test_waits_while_the_holder_lives_and_takes_over_when_its_process_dies(
    layout: StateLayout,
) -> None:
    primary = lease.acquire(layout, JOB, "driver-1")  # this process: alive
    ctx = Ctx(layout)
    thread, outcome = watch_in_thread(ctx, primary)
    for _ in range(5):
        time.sleep(0.05)
        primary = lease.heartbeat(layout, primary)
    assert outcome == [] and thread.is_alive()
    # the primary dies with its node: its process is gone, its heartbeat still fresh
    write_json_atomic(layout.lease_file(JOB), {**asdict(primary), "pid": dead_pid()})
    thread.join(5)
    assert outcome == ["took over"]
    assert ctx.lease is not None and ctx.lease.holder == "driver-2"
    assert ctx.lease.epoch == primary.epoch + 1  # the dead driver's writes are fenced
    assert ctx.board.fields["took_over_from"] == "driver-1"
    with pytest.raises(lease.Fenced):
        lease.check(layout, primary)


def test_takes_over_a_holder_on_another_host_once_its_heartbeat_is_stale(
    layout: StateLayout,
) -> None:
    primary = lease.acquire(layout, JOB, "driver-1", ttl=0.3)
    write_json_atomic(layout.lease_file(JOB), {**asdict(primary), "host": "elsewhere"})
    primary = lease.read_lease(layout, JOB)  # type: ignore[assignment]
    ctx = Ctx(layout)
    thread, outcome = watch_in_thread(ctx, primary)
    thread.join(5)
    assert outcome == ["took over"] and ctx.lease is not None


def test_a_clean_stop_dismisses_the_standby(layout: StateLayout) -> None:
    primary = lease.acquire(layout, JOB, "driver-1")
    ctx = Ctx(layout)
    thread, outcome = watch_in_thread(ctx, primary)
    time.sleep(0.05)
    lease.release(layout, primary)  # a savepoint with cancel, a stop, a source reset
    thread.join(5)
    assert len(outcome) == 1 and isinstance(outcome[0], hot_standby.Dismissed)
    assert "gave the job's lease up" in str(outcome[0])
    assert ctx.lease is None
    assert lease.read_lease(layout, JOB).holder == "driver-1"  # type: ignore[union-attr]


def test_a_standby_whose_jvm_died_never_takes_the_job(
    layout: StateLayout, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Killed through the master, a driver's JVM dies and its Python lives on: it must not
    take the lease when the primary dies (a drill saw one do it, then die: nobody ran the
    job, and the real standby was dismissed because the job had passed to another driver)."""
    primary = lease.acquire(layout, JOB, "driver-1")
    monkeypatch.setattr(hot_standby, "DRIVER_JVM_PID", dead_pid())  # no longer our parent
    ctx = Ctx(layout)
    thread, outcome = watch_in_thread(ctx, primary)
    thread.join(5)
    assert len(outcome) == 1 and isinstance(outcome[0], hot_standby.JvmGone)
    assert ctx.lease is None and lease.read_lease(layout, JOB) == primary
    with pytest.raises(hot_standby.JvmGone):
        hot_roles.take_role(layout, JOB, "1", True, "driver-2", timeout=5,
                            check=hot_standby.check_jvm)  # fmt: skip


def test_a_job_passed_to_another_driver_dismisses_the_standby(layout: StateLayout) -> None:
    """It stands behind one driver of one version, never behind whatever runs next."""
    primary = lease.acquire(layout, JOB, "driver-1", ttl=0.3)
    ctx = Ctx(layout)
    time.sleep(0.35)
    nxt = lease.acquire(layout, JOB, "driver-9")  # e.g. an upgrade's next version
    thread, outcome = watch_in_thread(ctx, primary)
    thread.join(5)
    assert len(outcome) == 1 and isinstance(outcome[0], hot_standby.Dismissed)
    assert "passed to driver driver-9" in str(outcome[0])
    assert lease.read_lease(layout, JOB) == nxt


def test_waits_for_a_running_primary_then_stands_behind_it(layout: StateLayout) -> None:
    def take(timeout: float) -> tuple[hot_roles.Role, lease.Lease]:
        return hot_roles.take_role(layout, JOB, "1", True, "driver-2", timeout=timeout,
                                   poll=0.05)  # fmt: skip

    with pytest.raises(hot_standby.Dismissed, match="no running driver"):
        take(0.1)
    held = lease.acquire(layout, JOB, "driver-1")
    write_json_atomic(layout.status_file(JOB), {"state": "STARTING"})
    with pytest.raises(hot_standby.Dismissed):
        take(0.6)
    # the status of the driver it took the lease from: not yet its own
    write_json_atomic(layout.status_file(JOB),
                      {"state": "RUNNING", "driver_id": "driver-0", "version": "1"})  # fmt: skip
    with pytest.raises(hot_standby.Dismissed):
        take(0.6)
    running = {"state": "RUNNING", "driver_id": "driver-1", "version": "2"}
    write_json_atomic(layout.status_file(JOB), running)
    with pytest.raises(hot_standby.Dismissed):  # another version runs: never stand behind it
        take(0.6)
    write_json_atomic(layout.status_file(JOB), {**running, "version": "1"})
    assert take(2) == (hot_roles.Role.STANDBY, held)
