"""One observation of the world, read once: the jobs (drivers, standbys), the master's
document and its workers with their free cores, the procedures in flight with the holders of
their jobs' operation leases, the savepoints, and the declarative deployments and savepoint
requests with their status.

:func:`take` asks the master once and builds every job's view from its document on the read
side (:func:`streamops.job_reads.view_of`); when the master does not answer, every job is
shown as the state root alone shows it (live while its driver keeps the job's lease fresh)
and the error is kept: the one place that fallback is chosen. Health, the reconcile, the
dashboard, ``streamops jobs`` and ``streamops get`` read a :class:`Snapshot`; each decides
for itself what a master that is down means (health judges the jobs from the state root, the
reconcile judges nothing). What is not needed by every reader (the workers, the procedures in
flight, the savepoints, the deployments and savepoint requests) is read on first use, from the
state root or the master's document already fetched: never a second call to the master.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from streamops.cluster.capacity import Node, nodes_of_master
from streamops.cluster.client import MasterClient
from streamops.exceptions import ClusterNotRunning
from streamops.job_reads import view_of
from streamops.job_view import JobView
from streamops.settings import Settings
from streamops.state import op_lease
from streamops.state.declarative.status import DeploymentStatus, RequestStatus
from streamops.state.declarative.store import Declared, Store
from streamops.state.intents import IntentSeen, records
from streamops.state.layout import StateLayout
from streamops.state.savepoints.catalogue import SavepointInfo, list_savepoints
from streamops_contract.names import check_name


@dataclass(frozen=True)
class InFlight:
    """A procedure not finished (its intent record), and the live holder of its job's
    operation lease (``None``: no job, or nobody holds it: an interrupted procedure)."""

    intent: IntentSeen
    holder: op_lease.OperationLease | None = None


@dataclass(frozen=True)
class Snapshot:
    """The world at ``taken_at``: a plain value, read by every observer of the cluster."""

    taken_at: float
    layout: StateLayout = field(repr=False, compare=False)
    master: dict[str, Any] | None = None  # the master's ``/json/``; None: it did not answer
    master_error: str = ""  # why it did not
    jobs: dict[str, JobView] = field(default_factory=dict)

    @property
    def master_up(self) -> bool:
        return self.master is not None

    @property
    def views(self) -> list[JobView]:
        return list(self.jobs.values())

    @cached_property
    def workers(self) -> list[Node]:
        """The ALIVE workers with their free cores and memory (none while the master is down)."""
        return nodes_of_master(self.master) if self.master is not None else []

    @cached_property
    def intents(self) -> list[IntentSeen]:
        """Every intent record of any kind, finished or not (``intents.records``)."""
        return records(self.layout)

    @cached_property
    def in_flight(self) -> list[InFlight]:
        """Every unfinished procedure of any kind, with its job's operation holder."""
        now = time.time()
        out = []
        for rec in self.intents:
            if rec.finished:
                continue
            lease = op_lease.read_operation(self.layout, rec.job) if rec.job else None
            alive = lease is not None and op_lease.holder_alive(lease, now)
            out.append(InFlight(rec, lease if alive else None))
        return out

    @cached_property
    def savepoints(self) -> list[SavepointInfo]:
        """Every complete savepoint, newest first (read only: nothing stale is removed)."""
        return list_savepoints(self.layout, clean=False)

    def savepoints_of(self, job: str) -> list[SavepointInfo]:
        return [s for s in self.savepoints if s.job == job]

    @cached_property
    def deployments(self) -> list[Declared[DeploymentStatus]]:
        """Every applied job deployment with its status, by name (one whose files cannot be
        read back, with why); its job is ``jobs.get(name)`` when the snapshot shows it."""
        return Store(self.layout).deployments()

    @cached_property
    def savepoint_requests(self) -> list[Declared[RequestStatus]]:
        """Every applied savepoint request with its status, by name, likewise."""
        return Store(self.layout).savepoint_requests()


def take(settings: Settings, jobs: Iterable[str] | None = None, *,
         client: MasterClient | None = None) -> Snapshot:  # fmt: skip
    """The world now: ``jobs`` (default: every job of the state root) through the master's
    document, asked once (of ``client``, default the settings' master); if the master does
    not answer, as the state root shows them."""
    layout = settings.layout
    names = layout.known_jobs() if jobs is None else [check_name("job", n) for n in jobs]
    now = time.time()
    master: dict[str, Any] | None
    try:
        master, error = (client or MasterClient(settings)).state(), ""
    except ClusterNotRunning as exc:  # a driver runs on while the master is away
        master, error = None, str(exc)
    views = {n: view_of(settings, n, master) for n in names}
    return Snapshot(now, layout, master, error, views)
