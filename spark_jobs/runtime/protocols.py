"""What the runtime's helpers need of a running job, so they do not import its context.

``JobContext`` (``context.py``) is the job author's API; the supervision (``supervision.py``),
the lease fencing (``fencing.py``), the warm standby's gate (``gate.py``), the control loop
(``control.py``), the stage descriptions (``describe.py``) and the standbys (``standby.py``,
``hot_standby.py``) work on a job through :class:`RunningJob`, a protocol the context
satisfies, and on its stages through :class:`Stage`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

from pyspark.sql import DataFrame, SparkSession

from spark_jobs.runtime.status import StatusBoard
from streamops_contract.spec import JobSpec
from streamops_contract.state.layout import StateLayout
from streamops_contract.state.lease import Lease

BatchSink = Callable[[DataFrame, int], None]


@dataclass(frozen=True)
class Stage:
    """One named streaming query: the unit of state compatibility."""

    name: str
    frame: DataFrame
    sink: BatchSink
    output_mode: str = "append"
    stateful: bool = False
    dry_sink: bool = False  # built for a rehearsal context, the sink computes but writes nothing


class Fence(Protocol):
    """The job's lease as its driver holds it (:class:`spark_jobs.runtime.fencing.LeaseFence`)."""

    lease: Lease | None

    def acquire(self, wait: float | None = None) -> None: ...

    def check(self) -> None: ...

    def heartbeat(self) -> None: ...

    def release(self) -> None: ...

    def fenced(self, sink: BatchSink) -> BatchSink: ...


class Controls(Protocol):
    """The driver's side of the control requests (``control.ControlLoop``)."""

    def poll(self, queries: dict[str, Any]) -> Literal["exit"] | None: ...


class RunningJob(Protocol):
    """A built job in its driver: its stages, status board, checkpoints and lease."""

    spark: SparkSession
    spec: JobSpec
    layout: StateLayout
    stages: list[Stage]
    board: StatusBoard
    from_savepoint: str | None
    lease: Lease | None  # held while the job runs (streamops_contract.state.lease)
    fence: Fence
    control: Controls
    gate_file: Path | None  # a standby's: its armed queries wait for it
    hooks: list[Callable[[Any], object]]  # run once the job runs (JobContext.on_started)

    @property
    def job(self) -> str: ...

    def checkpoint_for(self, stage: str) -> str: ...

    def describe(self, stage: str) -> dict[str, Any] | None: ...

    def release_lease(self) -> None: ...
