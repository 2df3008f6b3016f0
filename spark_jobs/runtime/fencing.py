"""Lease fencing: the job's lease as its driver holds it (:mod:`streamops_contract.state.lease`).

The driver takes the lease before it writes anything, heartbeats it from the supervision
loop, checks it before every sink write (a driver that lost the lease writes nothing), and
gives it up on a clean stop.
"""

from __future__ import annotations

import logging
import time

from pyspark.sql import DataFrame

from spark_jobs.runtime.protocols import BatchSink
from spark_jobs.runtime.status import StatusBoard
from spark_jobs.runtime.superseded import another_live_driver, superseded
from streamops_contract.state import lease
from streamops_contract.state.layout import StateLayout

log = logging.getLogger("spark_jobs.runtime")
HEARTBEAT_S = 2.0


class LeaseFence:
    def __init__(self, layout: StateLayout, job: str, board: StatusBoard) -> None:
        self.layout = layout
        self.job = job
        self.board = board
        self.lease: lease.Lease | None = None
        self._last_heartbeat = 0.0

    @property
    def holder(self) -> str:
        ident = self.board.snapshot()
        return str(ident.driver_id or f"{ident.host}:{ident.pid}")

    def acquire(self, wait: float | None = None) -> None:
        """Take the job's lease; wait out a stale holder (a relaunch after a crash)."""
        deadline = time.monotonic() + (wait if wait is not None else lease.DEFAULT_TTL * 1.5)
        waited = False
        while True:
            try:
                self.lease = lease.acquire(self.layout, self.job, self.holder,
                                           app_id=self.board.snapshot().app_id,
                                           superseded=self.superseded)  # fmt: skip
                log.info("job %s: lease epoch %s taken by %s", self.job, self.lease.epoch,
                         self.holder)  # fmt: skip
                return
            except lease.Fenced:
                held = lease.read_lease(self.layout, self.job)
                own = self.board.snapshot().driver_id
                if held is not None and another_live_driver(self.layout, held, own):
                    raise  # a relaunch of a driver that was succeeded: a duplicate
                if time.monotonic() > deadline:
                    raise
                if not waited:
                    log.info("job %s: lease held by a live driver; waiting until it is released "
                             "or expires", self.job)  # fmt: skip
                waited = True
                time.sleep(0.25)

    def superseded(self, held: lease.Lease) -> bool:
        return superseded(self.layout, held, self.board.snapshot().driver_id)

    def check(self) -> None:
        if self.lease is not None:
            lease.check(self.layout, self.lease)

    def heartbeat(self) -> None:
        """Every :data:`HEARTBEAT_S`: renew the lease and merge the sources' state."""
        if self.lease is not None and time.monotonic() - self._last_heartbeat >= HEARTBEAT_S:
            self.lease = lease.heartbeat(self.layout, self.lease)
            self._last_heartbeat = time.monotonic()
            try:
                self.board.refresh_sources()
            except OSError:  # a status detail: never a reason to stop the job
                log.warning("job %s: cannot read its sources' state", self.job, exc_info=True)

    def release(self) -> None:
        if self.lease is not None:
            lease.release(self.layout, self.lease)
            self.lease = None

    def fenced(self, sink: BatchSink) -> BatchSink:
        def write(batch: DataFrame, batch_id: int) -> None:
            self.check()  # a driver that lost its lease writes nothing
            sink(batch, batch_id)

        return write
