"""The epoch lease that fences a job to one live driver (real files, real flock)."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from dataclasses import asdict
from pathlib import Path

import pytest

from streamops.state.layout import StateLayout, write_json_atomic
from streamops_contract.state import lease

JOB = "fleet-pings"


@pytest.fixture
def layout(tmp_path: Path) -> StateLayout:
    return StateLayout.at(tmp_path)


def test_first_driver_gets_epoch_one(layout: StateLayout) -> None:
    held = lease.acquire(layout, JOB, "driver-1", app_id="app-1")
    assert held.epoch == 1 and held.holder == "driver-1" and held.fresh
    assert lease.read_lease(layout, JOB) == held


def test_a_second_driver_is_fenced_while_the_holder_is_alive(layout: StateLayout) -> None:
    lease.acquire(layout, JOB, "driver-1")
    with pytest.raises(lease.Fenced, match="already run by driver driver-1"):
        lease.acquire(layout, JOB, "driver-2")


def test_a_relaunched_driver_takes_over_a_stale_lease(layout: StateLayout) -> None:
    lease.acquire(layout, JOB, "driver-1", ttl=0.2)
    time.sleep(0.3)
    taken = lease.acquire(layout, JOB, "driver-2")
    assert taken.epoch == 2 and taken.holder == "driver-2"


def test_a_fresh_lease_of_a_dead_process_on_this_host_is_taken_at_once(
    layout: StateLayout,
) -> None:
    """A driver relaunched after its node died gets a new driver id: it must not wait out the
    TTL of a holder whose process is provably gone."""
    child = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                           capture_output=True, text=True, check=True)  # fmt: skip
    held = lease.acquire(layout, JOB, "driver-1")
    write_json_atomic(layout.lease_file(JOB), {**asdict(held), "pid": int(child.stdout)})
    assert lease.read_lease(layout, JOB).fresh  # type: ignore[union-attr]
    taken = lease.acquire(layout, JOB, "driver-2")
    assert taken.epoch == 2 and taken.holder == "driver-2"
    # a holder on another host is only known by its heartbeat: waited for
    write_json_atomic(layout.lease_file(JOB), {**asdict(taken), "host": "elsewhere", "pid": 1})
    with pytest.raises(lease.Fenced, match="already run by driver driver-2"):
        lease.acquire(layout, JOB, "driver-3")


def test_the_old_holder_learns_it_lost_the_lease(layout: StateLayout) -> None:
    old = lease.acquire(layout, JOB, "driver-1", ttl=0.2)
    time.sleep(0.3)
    lease.acquire(layout, JOB, "driver-2")
    with pytest.raises(lease.Fenced, match="lost its lease to driver driver-2"):
        lease.check(layout, old)
    with pytest.raises(lease.Fenced):
        lease.heartbeat(layout, old)


def test_heartbeat_keeps_the_lease_fresh(layout: StateLayout) -> None:
    held = lease.acquire(layout, JOB, "driver-1", ttl=0.5)
    time.sleep(0.3)
    held = lease.heartbeat(layout, held)
    time.sleep(0.3)
    with pytest.raises(lease.Fenced):
        lease.acquire(layout, JOB, "driver-2")


def test_release_lets_the_next_version_start_at_once(layout: StateLayout) -> None:
    held = lease.acquire(layout, JOB, "driver-1")
    lease.release(layout, held)
    assert lease.acquire(layout, JOB, "driver-2").epoch == 2


def test_concurrent_acquisitions_give_exactly_one_holder(layout: StateLayout) -> None:
    winners: list[str] = []
    losers: list[str] = []

    def race(name: str) -> None:
        try:
            lease.acquire(layout, JOB, name)
            winners.append(name)
        except lease.Fenced:
            losers.append(name)

    threads = [threading.Thread(target=race, args=(f"driver-{i}",)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(winners) == 1 and len(losers) == 7


def test_a_killed_holder_not_yet_reaped_is_gone(layout: StateLayout) -> None:
    """Signal 0 still reaches a zombie: a driver killed with its JVM waits to be reaped."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    deadline = time.monotonic() + 10
    while Path(f"/proc/{child.pid}/stat").read_text().rpartition(")")[2].split()[0] != "Z":
        assert time.monotonic() < deadline, "the child did not exit"
        time.sleep(0.01)
    held = lease.acquire(layout, JOB, "driver-1")
    write_json_atomic(layout.lease_file(JOB), {**asdict(held), "pid": child.pid})
    try:
        assert lease.holder_gone(lease.read_lease(layout, JOB))  # type: ignore[arg-type]
        assert lease.acquire(layout, JOB, "driver-2").epoch == 2
    finally:
        child.wait()
    assert not lease.holder_gone(held)  # this process: alive


def test_the_ops_side_gives_up_a_dead_holder_s_lease_but_not_a_live_one(tmp_path: Path) -> None:
    """After `streamops cancel` (or the orphans cleared), a driver that starts later must not
    take over a dead holder's job: the lease is marked given up, as a clean stop leaves it."""
    layout = StateLayout.at(tmp_path)
    assert lease.give_up(layout, "job-a") is None  # never held: nothing to give up
    held = lease.acquire(layout, "job-a", "driver-1")  # this process: alive
    assert lease.give_up(layout, "job-a") == held  # a live holder is left alone
    given = lease.give_up(layout, "job-a", unless_live=False)  # its driver was just killed
    assert given is not None and given.heartbeat_at == 0.0 and given.epoch == held.epoch
    assert not lease.alive(lease.read_lease(layout, "job-a"))
