"""Job fencing: one live driver per job name, through an epoch lease in the state root.

``jobs/<job>/lease.json`` holds the epoch, the holder (driver id, app id, host, pid) and a
heartbeat. A driver acquires the lease before it writes anything: if another holder's
heartbeat is fresh and its process may be alive it is refused (:class:`Fenced`); if the
heartbeat is stale, or the holder's process on this host is gone (the holder died, e.g.
with its node, before ``--supervise`` relaunched it), the new driver takes over with the next
epoch. Every change happens under an exclusive ``flock`` of ``lease.lock``. A driver that
finds a different epoch in the file has lost its lease and must stop writing.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import asdict, dataclass
from pathlib import Path

from streamops_contract.exceptions import JobError
from streamops_contract.hosts import this_host
from streamops_contract.state.layout import StateLayout, read_json, write_json_atomic
from streamops_contract.state.locks import file_lock

DEFAULT_TTL = 20.0


class Fenced(JobError):
    """Another live driver holds the job's lease (or took it over): do not write."""


@dataclass(frozen=True)
class Lease:
    job: str
    epoch: int
    holder: str
    app_id: str | None
    host: str
    pid: int
    acquired_at: float
    heartbeat_at: float
    ttl: float = DEFAULT_TTL

    @property
    def fresh(self) -> bool:
        return time.time() - self.heartbeat_at < self.ttl


def _locked(layout: StateLayout, job: str) -> AbstractContextManager[None]:
    return file_lock(layout.lease_file(job).with_suffix(".lock"))


def read_lease(layout: StateLayout, job: str) -> Lease | None:
    data = read_json(layout.lease_file(job))
    return Lease(**data) if data else None


def acquire(
    layout: StateLayout, job: str, holder: str, *, app_id: str | None = None,
    ttl: float = DEFAULT_TTL, superseded: Callable[[Lease], bool] | None = None,
) -> Lease:  # fmt: skip
    """Take the job's lease for ``holder`` or raise :class:`Fenced` naming the live holder.

    ``superseded`` tells whether a live-looking holder is no longer the cluster's (the
    master relaunched it elsewhere: its host was cut off, yet it still reaches the shared
    state root and heartbeats); such a holder is fenced at once, by the next epoch, and
    stops at its next heartbeat or write."""
    with _locked(layout, job):
        current = read_lease(layout, job)
        if (current and current.holder != holder and current.fresh
                and not holder_gone(current)
                and not (superseded is not None and superseded(current))):  # fmt: skip
            raise Fenced(
                f"job {job} is already run by driver {current.holder} on {current.host} "
                f"(epoch {current.epoch}, heartbeat {time.time() - current.heartbeat_at:.0f}s "
                "ago); this driver exits without writing"
            )
        now = time.time()
        lease = Lease(
            job=job, epoch=(current.epoch + 1) if current else 1, holder=holder, app_id=app_id,
            host=this_host(), pid=os.getpid(), acquired_at=now, heartbeat_at=now,
            ttl=ttl,
        )  # fmt: skip
        write_json_atomic(layout.lease_file(job), asdict(lease))
        return lease


def holder_gone(lease: Lease) -> bool:
    """Whether the lease's holder is provably dead: its process, on this host, is gone. A
    driver relaunched after its node died (a new driver id) then takes the job over at once
    instead of waiting out the TTL; a holder on another host is waited for (its heartbeat is
    the only evidence)."""
    if lease.host != this_host() or lease.pid <= 0:
        return False
    try:
        os.kill(lease.pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return _zombie(lease.pid)


def _zombie(pid: int) -> bool:
    """Whether ``pid`` is dead but not yet reaped (a driver killed with its JVM parent waits
    for init to reap it: signal 0 still reaches it for a second or more)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:  # no /proc (not Linux) or gone meanwhile
        return not Path(f"/proc/{pid}").exists() and Path("/proc/self").exists()
    return stat.rpartition(")")[2].split()[:1] == ["Z"]


def heartbeat(layout: StateLayout, lease: Lease) -> Lease:
    """Renew ``lease``; raise :class:`Fenced` if another driver has taken it over."""
    with _locked(layout, lease.job):
        check(layout, lease)
        renewed = Lease(**{**asdict(lease), "heartbeat_at": time.time()})
        write_json_atomic(layout.lease_file(lease.job), asdict(renewed))
        return renewed


def check(layout: StateLayout, lease: Lease) -> None:
    """Raise :class:`Fenced` unless the file still holds ``lease``'s epoch and holder."""
    current = read_lease(layout, lease.job)
    if current is None or current.epoch != lease.epoch or current.holder != lease.holder:
        who = f"driver {current.holder} (epoch {current.epoch})" if current else "nobody"
        raise Fenced(
            f"job {lease.job}: this driver ({lease.holder}, epoch {lease.epoch}) lost its "
            f"lease to {who}; it stops writing and exits"
        )


def alive(lease: Lease | None) -> bool:
    """Whether a live driver holds ``lease``: fresh heartbeat, process not provably gone."""
    return lease is not None and lease.fresh and not holder_gone(lease)


def give_up(layout: StateLayout, job: str, *, unless_live: bool = True) -> Lease | None:
    """The ops side's release, once no driver of ``job`` is left (``streamops cancel``, the
    orphans cleared): the lease is marked given up (as :func:`release` does), so a driver
    that starts later waits for the primary it was submitted with instead of taking over a
    dead holder's job. A live holder's lease is left alone unless ``unless_live`` is off (its
    driver was just killed: its process may linger a moment). The lease as now."""
    with _locked(layout, job):
        current = read_lease(layout, job)
        if current is None or current.heartbeat_at == 0.0 or (unless_live and alive(current)):
            return current
        given_up = Lease(**{**asdict(current), "heartbeat_at": 0.0})
        write_json_atomic(layout.lease_file(job), asdict(given_up))
        return given_up


def release(layout: StateLayout, lease: Lease) -> None:
    """Give the lease up at a clean stop, so the next version need not wait for the TTL."""
    with _locked(layout, lease.job):
        current = read_lease(layout, lease.job)
        if current and current.epoch == lease.epoch and current.holder == lease.holder:
            expired = Lease(**{**asdict(lease), "heartbeat_at": 0.0})
            write_json_atomic(layout.lease_file(lease.job), asdict(expired))
