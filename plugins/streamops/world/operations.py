"""The operations port: everything a procedure's step does to the world, in one value.

Every step takes an :class:`Operations` first; it reaches the cluster only through it: the
job ``registry`` (the jobs' views, their waits, cancels; ``registry.client`` the master),
the ``savepoints`` (ask a driver for one, read the catalogue), the ``submitter`` (submit,
start from a savepoint, warm standbys, describe a version's stages), the ``clock``, and for
the rolling scale and the cluster restart the ``nodes`` (the workers and the daemons, through
their agents: :meth:`Operations.require_nodes`), and the ``backlog`` of a job's sources (read
only for a job whose spec declares a ``latency_slo``). The real one is built
from the settings (:func:`streamops.world.port.operations`); a test passes one fake
instead of patching modules. The entry points take either the settings or a port (:data:`World`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from streamops.exceptions import ClusterError
from streamops.settings import Settings
from streamops.timeouts import MASTER_TIMEOUT

if TYPE_CHECKING:
    from streamops.cluster.client import MasterClient
    from streamops.cluster.submission import Submission
    from streamops.job_view import JobView
    from streamops.spec import JobSpec
    from streamops.state.layout import StateLayout
    from streamops.verdict import Observation
    from streamops.world.standby import Standby
    from streamops_contract.state.savepoints.manifest import Manifest


class Registry(Protocol):
    """What the procedures ask of the job registry (:class:`streamops.jobs.JobRegistry`)."""

    @property
    def client(self) -> MasterClient: ...

    def view(self, name: str) -> JobView: ...

    def list(self) -> list[JobView]: ...

    def names(self) -> list[str]: ...

    def driver_live(self, driver_id: str) -> bool: ...

    def observe(self, name: str, since_driver: str | None = None) -> Observation: ...

    def current_spec(self, name: str) -> JobSpec: ...

    def wait_healthy(self, name: str, *, timeout: float,
                     since_driver: str | None = None) -> JobView: ...  # fmt: skip

    def wait_driver_ended(self, name: str, driver_id: str | None, timeout: float) -> None: ...

    def failure_detail(self, view: JobView, driver_id: str | None = None) -> str: ...

    def drivers(self, name: str) -> list[Any]: ...

    def cancel(self, name: str) -> list[str]: ...

    def kill_driver(self, name: str, driver_id: str) -> None: ...

    def clear_orphans(self, name: str, *, keep: frozenset[str] | set[str] = frozenset()
                      ) -> list[str]: ...  # fmt: skip


class SavepointStore(Protocol):
    """Savepoints: asking a running driver for one, and the catalogue of those taken."""

    def request(self, job: str, name: str, *, cancel: bool, handover: bool, timeout: float,
                request_id: str | None) -> str: ...  # fmt: skip

    def get(self, name: str, job: str | None = None) -> Manifest: ...

    def taken(self, name: str, job: str | None = None) -> bool: ...


class Submitter(Protocol):
    """Drivers started: submissions, starts from a savepoint, warm standbys."""

    def submit(self, spec: JobSpec, *, wait_healthy: float | None = None,
               extra_args: tuple[str, ...] = (), replacing: str | None = None,
               transport: Callable[[Submission], str] | None = None) -> str: ...  # fmt: skip

    def start_from_savepoint(self, spec: JobSpec, savepoint: str, stages: Iterable[str], *,
                             wait_healthy: float | None = None,
                             replacing: str | None = None) -> str: ...  # fmt: skip

    def restore_version(self, spec: JobSpec, savepoint: str, *, stop: Iterable[str | None] = (),
                        wait_healthy: float) -> str: ...  # fmt: skip

    def wants_standby(self, spec: JobSpec, mode: str) -> bool: ...

    def handover_fits(self, spec: JobSpec, standby: Standby | None) -> bool: ...

    def start_standby(self, spec: JobSpec, *, timeout: float,
                      new_stages: Iterable[str] = ()) -> Standby: ...  # fmt: skip

    def released(self, standby: Standby) -> bool: ...

    def release_standby(self, standby: Standby, savepoint: str, stages: Iterable[str]) -> None: ...

    def abort_standby(self, standby: Standby) -> None: ...

    def describe_stages(self, spec: JobSpec) -> dict[str, dict[str, Any]]: ...


@dataclass(frozen=True)
class ScaleResult:
    """The workers a change of the workers started and removed, and those running after it."""

    started: tuple[str, ...]
    removed: tuple[str, ...]
    running: tuple[str, ...]

    def summary(self) -> str:
        return (
            f"started {', '.join(self.started) or 'none'}; removed "
            f"{', '.join(self.removed) or 'none'}; running workers now: "
            f"{', '.join(self.running) or 'none'} ({len(self.running)})"
        )


class Nodes(Protocol):
    """The cluster's workers and daemons, through the node agents
    (:mod:`streamops.world.cluster_nodes`): the rolling scale's workers, the cluster
    restart's whole cluster."""

    def running_workers(self) -> list[str]:
        """Worker nodes whose agent reports a running daemon, in worker order."""
        ...

    def add_worker(self, name: str) -> ScaleResult:
        """Start worker ``name`` (nothing when it runs) until the master lists it ALIVE."""
        ...

    def remove_worker(self, name: str) -> ScaleResult:
        """Decommission running worker ``name`` gracefully until the master drops it."""
        ...

    def scale_to(self, workers: int) -> ScaleResult:
        """Start idle workers, or decommission workers one at a time, until ``workers`` run."""
        ...

    def wait_alive_count(self, count: int, timeout: float = MASTER_TIMEOUT) -> None:
        """Wait until the master lists exactly ``count`` ALIVE workers."""
        ...

    def stop_all(self) -> None: ...

    def start_all(self, workers: list[str]) -> None: ...

    def switch_release(self, release: str) -> None: ...


@dataclass(frozen=True)
class BacklogSeen:
    """A job's sources' backlog in rows (records and journal entries; the sum over its
    sources), and what could not be counted in rows (a source in files, or unknown)."""

    rows: int
    uncounted: tuple[str, ...] = ()


class SourceBacklog(Protocol):
    """How far a job's sources' upstreams are ahead of its committed positions (the probes
    health reads: :mod:`streamops.world.source_probes`)."""

    def of(self, view: JobView) -> BacklogSeen: ...


class Clock(Protocol):
    def time(self) -> float: ...

    def monotonic(self) -> float: ...

    def sleep(self, seconds: float) -> None: ...


@dataclass
class Operations:
    """The world a procedure's steps act on (see the module's doc)."""

    settings: Settings
    registry: Registry
    savepoints: SavepointStore
    submitter: Submitter
    clock: Clock
    nodes: Nodes | None = None  # the scale's and cluster restart's; a job's need none
    backlog: SourceBacklog | None = None  # a job's sources' backlog; None: not known

    @property
    def layout(self) -> StateLayout:
        return self.settings.layout

    @property
    def client(self) -> MasterClient:
        return self.registry.client

    def require_nodes(self, error: type[ClusterError] = ClusterError) -> Nodes:
        """The ``nodes``; ``error`` when this port reaches no node agents."""
        if self.nodes is None:
            raise error("this operations port reaches no node agents")
        return self.nodes


World = Settings | Operations
"""What an entry point takes: the settings (the real world is built:
:func:`streamops.world.port.operations`) or a port."""
