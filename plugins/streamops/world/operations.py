"""The operations port: everything a procedure's step does to the world, in one value.

Every step takes an :class:`Operations` first; it reaches the cluster only through it: the
job ``registry`` (the jobs' views, their waits, cancels; ``registry.client`` the master),
the ``savepoints`` (ask a driver for one, read the catalogue), the ``submitter`` (submit,
start from a savepoint, warm standbys, describe a version's stages), the ``clock``, and for
the cluster restart the ``nodes`` (the daemons, through their agents). The real one is built
from the settings (:func:`streamops.world.port.operations`); a test passes one fake
instead of patching modules. The entry points take either the settings or a port (:data:`World`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from streamops.settings import Settings

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


class Nodes(Protocol):
    """The cluster's daemons, through the node agents
    (:mod:`streamops.world.cluster_nodes`)."""

    def running_workers(self) -> list[str]: ...

    def stop_all(self) -> None: ...

    def start_all(self, workers: list[str]) -> None: ...

    def switch_release(self, release: str) -> None: ...


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
    nodes: Nodes | None = None  # the cluster restart's; a job's procedures need none

    @property
    def layout(self) -> StateLayout:
        return self.settings.layout

    @property
    def client(self) -> MasterClient:
        return self.registry.client


World = Settings | Operations
"""What an entry point takes: the settings (the real world is built:
:func:`streamops.world.port.operations`) or a port."""
