"""Which role a driver of a hot job takes at its start: decided by the job's lease alone.

The decision is a pure function (:func:`hot_roles.decide`) of the lease, whether its holder
lives, and whether the driver was submitted as the standby; :func:`hot_roles.take_role` acts
on it with real lease files, a real flock and real (dead or live) processes. The holes these
close: a relaunched driver that waited (up to 15 minutes) for a primary that no longer
existed, because it had been submitted as the standby, or because the primary it found at
its start died while it waited.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from dataclasses import asdict, replace
from pathlib import Path

import pytest

from spark_jobs.runtime import hot_roles
from spark_jobs.runtime.hot_roles import Role
from streamops.state.layout import StateLayout, read_json, write_json_atomic
from streamops_contract.state import lease

JOB = "fleet-pings"
VERSION = "1"


@pytest.fixture
def layout(tmp_path: Path) -> StateLayout:
    return StateLayout.at(tmp_path)


def dead_pid() -> int:
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    return int(done.stdout)


def held(holder: str = "driver-1", heartbeat_at: float | None = None) -> lease.Lease:
    now = time.time()
    beat = now if heartbeat_at is None else heartbeat_at
    return lease.Lease(job=JOB, epoch=3, holder=holder, app_id=None, host="h", pid=1,
                       acquired_at=now, heartbeat_at=beat)  # fmt: skip


def die(layout: StateLayout) -> lease.Lease:
    """The lease's holder dies with its node: its process is gone, its heartbeat fresh."""
    current = lease.read_lease(layout, JOB)
    assert current is not None
    write_json_atomic(layout.lease_file(JOB), {**asdict(current), "pid": dead_pid()})
    return current


def running(layout: StateLayout, driver: str, version: str = VERSION) -> None:
    write_json_atomic(layout.status_file(JOB),
                      {"state": "RUNNING", "driver_id": driver, "version": version})  # fmt: skip


# --- the decision, a pure function ------------------------------------------------------
@pytest.mark.parametrize("as_standby", [True, False])
def test_a_live_holder_is_stood_behind(as_standby: bool) -> None:
    assert hot_roles.decide(held(), holder_live=True, submitted_as_standby=as_standby) is (
        Role.STANDBY
    )


@pytest.mark.parametrize("as_standby", [True, False])
def test_a_dead_or_expired_holder_that_never_gave_the_lease_up_is_taken_over(
    as_standby: bool,
) -> None:
    """The hole: a relaunched standby (or a relaunch that stood by) waited for a primary
    that no longer existed. Nobody live holds the lease: whoever starts runs the job."""
    for dead in (held(), held(heartbeat_at=time.time() - 3600)):
        assert hot_roles.decide(dead, holder_live=False, submitted_as_standby=as_standby) is (
            Role.PRIMARY
        )


def test_the_first_start_and_a_clean_stop_wait_for_the_submitted_primary() -> None:
    """Never held, or given up cleanly (a stop, a savepoint with cancel, `streamops cancel`):
    the standby waits for the primary it was submitted with; the primary runs."""
    released = held(heartbeat_at=0.0)
    for lease_now in (None, released):
        assert hot_roles.decide(lease_now, holder_live=False, submitted_as_standby=True) is (
            Role.WAIT
        )
        assert hot_roles.decide(lease_now, holder_live=False, submitted_as_standby=False) is (
            Role.PRIMARY
        )


# --- acting on it -------------------------------------------------------------------------
def test_a_relaunched_standby_takes_a_lease_its_dead_holder_left(layout: StateLayout) -> None:
    """The two-node-loss sequence: the primary and its standby died together; the relaunch
    of the standby (submitted with --hot-standby) must run the job, not wait for it."""
    first = lease.acquire(layout, JOB, "driver-1")
    running(layout, "driver-1")
    die(layout)
    role, got = hot_roles.take_role(layout, JOB, VERSION, True, "driver-7", timeout=2, poll=0.01)
    assert role is Role.PRIMARY
    assert (got.holder, got.epoch) == ("driver-7", first.epoch + 1)
    assert lease.read_lease(layout, JOB) == got
    with pytest.raises(lease.Fenced):  # the dead driver's late writes are fenced
        lease.check(layout, first)


def test_a_waiting_driver_takes_over_when_the_primary_it_waited_for_dies(
    layout: StateLayout,
) -> None:
    """It found a live holder at its start (still starting: not RUNNING), then that holder
    died: it must not go on waiting for it."""
    first = lease.acquire(layout, JOB, "driver-1")
    outcome: list[tuple[Role, lease.Lease]] = []
    thread = threading.Thread(target=lambda: outcome.append(hot_roles.take_role(
        layout, JOB, VERSION, False, "driver-7", timeout=5, poll=0.01)), daemon=True)  # fmt: skip
    thread.start()
    time.sleep(0.2)
    assert outcome == []  # a live primary that does not run yet: it waits
    die(layout)
    thread.join(5)
    assert len(outcome) == 1, "it went on waiting for a dead primary"
    role, got = outcome[0]
    assert role is Role.PRIMARY and got.epoch == first.epoch + 1


def test_a_live_running_primary_is_stood_behind(layout: StateLayout) -> None:
    first = lease.acquire(layout, JOB, "driver-1")
    running(layout, "driver-1")
    role, got = hot_roles.take_role(layout, JOB, VERSION, False, "driver-7", timeout=2, poll=0.01)
    assert (role, got) == (Role.STANDBY, first)
    assert (read_json(layout.hot_standby_file(JOB)) or {}).get("driver_id") == "driver-7"


def test_a_standby_never_stands_behind_another_version(layout: StateLayout) -> None:
    lease.acquire(layout, JOB, "driver-1")
    running(layout, "driver-1", version="2")
    with pytest.raises(hot_roles.Dismissed, match="no running driver"):
        hot_roles.take_role(layout, JOB, VERSION, True, "driver-7", timeout=0.3, poll=0.01)


def test_two_relaunched_drivers_racing_end_with_exactly_one_primary(layout: StateLayout) -> None:
    """Both find the lease's holder dead at once: the flock decides; the loser stands behind
    the winner once it runs."""
    first = lease.acquire(layout, JOB, "driver-1")
    running(layout, "driver-1")
    die(layout)
    start = threading.Barrier(2)
    outcome: dict[str, tuple[Role, lease.Lease]] = {}

    def relaunched(holder: str) -> None:
        start.wait()
        outcome[holder] = hot_roles.take_role(layout, JOB, VERSION, True, holder, timeout=5,
                                              poll=0.01)  # fmt: skip

    threads = [threading.Thread(target=relaunched, args=(h,), daemon=True)
               for h in ("driver-7", "driver-8")]  # fmt: skip
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + 5
    while not outcome and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(outcome) == 1, outcome
    (winner, (role, won)), = outcome.items()
    assert role is Role.PRIMARY and won.epoch == first.epoch + 1
    running(layout, winner)  # its stages committed: the other stands behind it
    for thread in threads:
        thread.join(5)
    roles = sorted(r.value for r, _ in outcome.values())
    assert roles == ["primary", "standby"], outcome
    loser = next(h for h in outcome if h != winner)
    assert outcome[loser][1] == won
    assert lease.read_lease(layout, JOB) == won


def test_the_claimed_lease_is_kept_fresh_until_the_driver_runs(layout: StateLayout) -> None:
    """Claimed before the session starts (seconds on a loaded machine, maybe more than the
    TTL), the lease is heartbeaten meanwhile: no other driver takes it from a live primary."""
    claimed = lease.acquire(layout, JOB, "driver-7", ttl=0.5)
    keeper = hot_roles.LeaseKeeper(layout, claimed, every=0.05)
    time.sleep(0.8)
    current = lease.read_lease(layout, JOB)
    assert current is not None and current.fresh
    kept = keeper.stop()
    assert replace(kept, heartbeat_at=0.0) == replace(claimed, heartbeat_at=0.0)
    assert kept.heartbeat_at > claimed.heartbeat_at


def test_a_claimed_lease_whose_driver_lost_its_jvm_is_left_to_expire(layout: StateLayout) -> None:
    """Killed through the master, a driver's JVM dies and its Python may live on: it must not
    keep a lease it cannot run the job with."""
    claimed = lease.acquire(layout, JOB, "driver-7", ttl=0.3)

    def jvm_gone() -> None:
        raise RuntimeError("this driver's JVM is gone")

    keeper = hot_roles.LeaseKeeper(layout, claimed, every=0.05, check=jvm_gone)
    time.sleep(0.5)
    current = lease.read_lease(layout, JOB)
    assert current is not None and not current.fresh
    keeper.stop()
