"""The real operations port (:class:`~streamops.world.operations.Operations`) of a
state root: the job registry and master client of the settings, savepoints through the
control channel and the catalogue, submissions through the master."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from streamops.cluster.submission import Submission
from streamops.describe_stages import describe_spec_stages
from streamops.exceptions import JobError, JobNotFound, SavepointNotFound
from streamops.job_reads import spec_args
from streamops.job_view import JobView
from streamops.jobs import JobRegistry
from streamops.settings import Settings
from streamops.spec import JobSpec
from streamops.state.savepoints import catalogue
from streamops.timeouts import MASTER_PATIENCE
from streamops.world import restore, standby, submit
from streamops.world.cluster_nodes import AgentNodes
from streamops.world.operations import BacklogSeen, Operations, World
from streamops.world.source_probes import UNITS, Prober, probe_job
from streamops.world.standby import Standby
from streamops_contract.state import control
from streamops_contract.state.savepoints.manifest import Manifest


class SystemClock:
    def time(self) -> float:
        return time.time()

    def monotonic(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


@dataclass
class ControlSavepoints:
    """Savepoints asked of the running drivers through the control channel."""

    registry: JobRegistry

    def request(self, job: str, name: str, *, cancel: bool, handover: bool, timeout: float,
                request_id: str | None) -> str:  # fmt: skip
        """Ask the running ``job``'s driver for savepoint ``name`` (answered at its next
        batch boundary); the request id. Refused when the job is not running or the
        savepoint exists already."""
        view = self.registry.view(job)
        if not view.is_live:
            raise JobNotFound(f"job {job} is not running (state {view.state}); nothing to "
                              "savepoint")  # fmt: skip
        if self.taken(name):
            raise JobError(f"savepoint {name} exists already; pick another name")
        sent = control.send_request(self.registry.layout, job, "savepoint", name=name,
                                    cancel=cancel, timeout=timeout, handover=handover,
                                    request_id=request_id)  # fmt: skip
        return sent.id

    def get(self, name: str, job: str | None = None) -> Manifest:
        return catalogue.get_savepoint(self.registry.layout, name, job=job)

    def taken(self, name: str, job: str | None = None) -> bool:
        try:
            self.get(name, job)
        except SavepointNotFound:
            return False
        return True


@dataclass
class MasterSubmitter:
    """Drivers submitted to the master of the settings."""

    settings: Settings
    registry: JobRegistry

    def submit(self, spec: JobSpec, *, wait_healthy: float | None = None,
               extra_args: tuple[str, ...] = (), replacing: str | None = None,
               transport: Callable[[Submission], str] | None = None) -> str:  # fmt: skip
        return submit.submit_job(spec, self.settings, client=self.registry.client,
                                 wait_healthy=wait_healthy, extra_args=extra_args,
                                 replacing=replacing, transport=transport)  # fmt: skip

    def start_from_savepoint(self, spec: JobSpec, savepoint: str, stages: Iterable[str], *,
                             wait_healthy: float | None = None,
                             replacing: str | None = None) -> str:  # fmt: skip
        return restore.start_from_savepoint(spec, self.settings, savepoint, stages,
                                            wait_healthy=wait_healthy,
                                            replacing=replacing)  # fmt: skip

    def restore_version(self, spec: JobSpec, savepoint: str, *,
                        stop: Iterable[str | None] = (), wait_healthy: float) -> str:  # fmt: skip
        return restore.restore_version(self.settings, spec, savepoint, stop=stop,
                                       wait_healthy=wait_healthy)  # fmt: skip

    def wants_standby(self, spec: JobSpec, mode: str) -> bool:
        return standby.wants_standby(self.registry, spec, mode)

    def handover_fits(self, spec: JobSpec, ready: Standby | None) -> bool:
        return standby.handover_fits(self.registry, spec, ready)

    def start_standby(self, spec: JobSpec, *, timeout: float,
                      new_stages: Iterable[str] = ()) -> Standby:  # fmt: skip
        return standby.start_standby(spec, self.settings, timeout=timeout, new_stages=new_stages)

    def released(self, ready: Standby) -> bool:
        return standby.released(self.settings, ready)

    def release_standby(self, ready: Standby, savepoint: str, stages: Iterable[str]) -> None:
        standby.release_standby(self.settings, ready, savepoint, stages)

    def abort_standby(self, ready: Standby) -> None:
        standby.abort_standby(self.settings, ready)

    def describe_stages(self, spec: JobSpec) -> dict[str, dict[str, Any]]:
        return describe_spec_stages(spec, self.settings)


@dataclass
class ProbedBacklog:
    """A job's backlog as health reads it: each source probed at the committed position of
    the stage furthest behind; records and journal entries count as rows."""

    settings: Settings
    timeout: float = 1.0

    def of(self, view: JobView) -> BacklogSeen:
        args = spec_args(self.settings, view.name) or {}
        rows, uncounted = 0, []
        for probe in probe_job(Prober(self.timeout), view, args).values():
            if probe.backlog is not None and probe.unit in ROW_UNITS:
                rows += probe.backlog
            else:
                why = probe.unknown or probe.broken or probe.error or f"in {probe.unit}"
                uncounted.append(f"{probe.source}: {why}")
        return BacklogSeen(rows, tuple(uncounted))


ROW_UNITS = frozenset(u for u in UNITS.values() if u != "files")
"""The backlog units that count rows (a file of fleetsim-alpha holds an unknown number)."""


def real_operations(settings: Settings) -> Operations:
    """The real port. Its master calls wait up to ``MASTER_PATIENCE`` for a master that does
    not answer (killed and started again, FILESYSTEM recovery), so a procedure rides out a
    master restart in its middle instead of failing, and its rollback with it."""
    if not settings.master_patience:
        settings = settings.model_copy(update={"master_patience": MASTER_PATIENCE})
    registry = JobRegistry(settings)
    return Operations(settings, registry, ControlSavepoints(registry),
                      MasterSubmitter(settings, registry), SystemClock(),
                      AgentNodes(settings), ProbedBacklog(settings))  # fmt: skip


def operations(world: World) -> Operations:
    """The port of ``world``: itself, or the real one of these settings."""
    return world if isinstance(world, Operations) else real_operations(world)
