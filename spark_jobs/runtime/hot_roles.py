"""Which role a driver of a hot job (``standby: hot``) takes when it starts, from the lease alone.

Every driver of a hot job but a warm standby (``--standby``) passes through
:func:`take_role` before it creates its Spark session, whether it was submitted as the
primary, as the hot standby (``--hot-standby``), or relaunched by the master or its worker
as either. The rule (:func:`decide`), looked at again every :data:`POLL_S` while it waits:

- a **live** driver holds the lease (fresh heartbeat, process not provably gone): stand
  behind it, once its status says it runs this version (``STANDBY``);
- the lease's holder is **dead or expired** and never gave the lease up (a node lost, a
  driver killed): nobody runs the job, so take the lease now (the next epoch, under the
  lease's ``flock``) and run as the primary (``PRIMARY``), however this driver was
  submitted. Two drivers racing for it end with one holder; the other finds a live holder
  and stands behind it;
- the lease was **never held, or given up cleanly** (a stop, a savepoint with cancel,
  ``streamops cancel``): the driver submitted as the primary runs; the standby waits for it
  (``WAIT``).

So a relaunched driver never waits for a primary that no longer exists. The claimed lease is
heartbeaten (:class:`LeaseKeeper`) until the driver's supervision loop takes it over.
"""

from __future__ import annotations

import logging
import os
import re
import threading
import time
from collections.abc import Callable
from enum import Enum
from pathlib import Path

from spark_jobs.runtime.superseded import superseded
from streamops_contract.hosts import this_host
from streamops_contract.state import lease
from streamops_contract.state.job_status import read_status
from streamops_contract.state.layout import StateLayout, read_json, write_json_atomic

log = logging.getLogger("spark_jobs.hot_roles")

POLL_S = 0.5
PRIMARY_WAIT_S = 900.0  # how long a standby waits for a running driver to stand behind
KEEP_EVERY_S = 2.0  # heartbeats of a claimed lease before the supervision loop runs


DRIVER_ID = re.compile(r"^driver-\d+-\d+$")


def own_holder() -> str:
    """How this driver names itself in the lease, as its status does (a cluster-mode driver
    runs in ``<worker dir>/<driver id>``; else ``host:pid``)."""
    cwd = Path.cwd().name
    return cwd if DRIVER_ID.match(cwd) else f"{this_host()}:{os.getpid()}"


class Role(Enum):
    PRIMARY = "primary"  # holds the lease: runs the stages
    STANDBY = "standby"  # stands behind the live holder
    WAIT = "wait"  # the primary it was submitted with has not taken the lease yet


class Dismissed(Exception):
    """The driver this standby stood behind stopped cleanly, or the job passed to another
    driver: the standby exits without writing anything."""


def holder_live(held: lease.Lease | None) -> bool:
    """Whether a live driver holds ``held``: fresh heartbeat, process not provably gone."""
    return lease.alive(held)


def decide(held: lease.Lease | None, holder_live: bool, submitted_as_standby: bool) -> Role:
    """The role of a starting driver of a hot job (see the module's docstring)."""
    if held is not None and holder_live:
        return Role.STANDBY
    if held is None or held.heartbeat_at == 0.0:  # never held, or given up cleanly
        return Role.WAIT if submitted_as_standby else Role.PRIMARY
    return Role.PRIMARY  # its holder died without giving it up: nobody runs the job


def primary_running(layout: StateLayout, job: str, version: str, held: lease.Lease) -> bool:
    """Whether ``held``'s holder runs ``version`` (every stage committed a batch or found
    nothing to do): a standby started earlier would slow its first batches."""
    status = read_status(layout, job)
    own = (status.driver_id, f"{status.host}:{status.pid}")
    return (status.state == "RUNNING" and status.version == version
            and held.holder in own)  # fmt: skip


def take_role(
    layout: StateLayout, job: str, version: str, submitted_as_standby: bool, holder: str, *,
    timeout: float = PRIMARY_WAIT_S, poll: float = POLL_S, check: Callable[[], None] | None = None,
) -> tuple[Role, lease.Lease]:  # fmt: skip
    """Block until this driver (``holder``) is the job's primary, holding a lease it just
    took (``PRIMARY``), or stands behind a live running driver of ``version``, whose lease it
    returns (``STANDBY``). :class:`Dismissed` after ``timeout`` without either (e.g. an
    upgrade rolled back: the running version is another). ``check`` (a callable) runs at
    every look and may raise (this driver's JVM died)."""
    deadline = time.monotonic() + timeout
    announced = False
    while True:
        if check is not None:
            check()
        held = lease.read_lease(layout, job)
        dropped = held is not None and superseded(layout, held, holder)
        role = decide(held, holder_live(held) and not dropped, submitted_as_standby)
        if role is Role.PRIMARY:
            try:
                claimed = lease.acquire(layout, job, holder,
                                        superseded=lambda h: superseded(layout, h, holder))
            except lease.Fenced:  # another driver was quicker: it runs the job
                continue
            if held is not None and held.heartbeat_at:
                log.warning("job %s: driver %s (lease epoch %d) is gone and nobody runs the job: "
                            "this driver takes it over as the primary (epoch %d)", job,
                            held.holder, held.epoch, claimed.epoch)  # fmt: skip
            if announced:
                _forget_starting(layout, job, holder)
            return Role.PRIMARY, claimed
        if not announced:  # seen as this job's standby (starting) at once
            write_json_atomic(layout.hot_standby_file(job), {
                "driver_id": holder, "pid": os.getpid(), "starting_at": time.time()})  # fmt: skip
            announced = True
        if role is Role.STANDBY and held is not None and primary_running(
            layout, job, version, held
        ):
            log.info("job %s: standing behind driver %s (lease epoch %d)", job, held.holder,
                     held.epoch)  # fmt: skip
            return Role.STANDBY, held
        if time.monotonic() >= deadline:
            raise Dismissed(f"no running driver of job {job} to stand behind within "
                            f"{timeout:.0f}s")  # fmt: skip
        time.sleep(poll)


def _forget_starting(layout: StateLayout, job: str, holder: str) -> None:
    path = layout.hot_standby_file(job)
    doc = read_json(path) or {}
    if doc.get("driver_id") == holder and not doc.get("armed_at"):
        path.unlink(missing_ok=True)


class LeaseKeeper:
    """Heartbeats a lease claimed before the driver's session exists, until :meth:`stop`
    (the supervision loop heartbeats it from then on). A lease taken over meanwhile stops it
    (the supervision loop then finds itself fenced), and so does ``check`` raising: a driver
    whose JVM is gone leaves the lease to expire, for another driver to take."""

    def __init__(
        self, layout: StateLayout, held: lease.Lease, every: float = KEEP_EVERY_S,
        check: Callable[[], None] | None = None,
    ) -> None:  # fmt: skip
        self.layout, self.lease, self.every, self.check = layout, held, every, check
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="lease-keeper", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            try:
                if self.check is not None:
                    self.check()  # a Python whose JVM died must not keep the job's lease
                self.lease = lease.heartbeat(self.layout, self.lease)
            except lease.Fenced as exc:
                log.error("%s", exc)
                return
            except OSError:  # a state root that hiccups: the next beat tries again
                log.warning("job %s: cannot heartbeat its lease", self.lease.job, exc_info=True)
            except Exception as exc:  # the check: this driver cannot run the job
                log.error("job %s: the claimed lease is no longer heartbeaten: %s",
                          self.lease.job, exc)  # fmt: skip
                return

    def stop(self) -> lease.Lease:
        """Stop heartbeating; the lease as last renewed."""
        self._stop.set()
        self._thread.join()
        return self.lease
