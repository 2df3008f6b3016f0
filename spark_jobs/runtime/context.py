"""JobContext: the job author's API — a job's stages, checkpoints, sources' options, hooks.

A job module exposes ``build(ctx: JobContext) -> None`` that declares stages with
:meth:`JobContext.add_stage`. The driver then runs them: :func:`spark_jobs.runtime.supervision.run`
starts one streaming query per stage (query name = stage name, checkpoint
``<state>/checkpoints/<job>/<stage>``) and supervises them until one fails or all stop; the
lease fencing is :mod:`spark_jobs.runtime.fencing`, a standby's gate
:mod:`spark_jobs.runtime.gate`. They work on the context through
:class:`~spark_jobs.runtime.protocols.RunningJob`.
"""

from __future__ import annotations

import json
import logging
import os
import re
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from spark_jobs.runtime.control import ControlLoop
from spark_jobs.runtime.describe import describe_stage
from spark_jobs.runtime.errors import JobFailed, short_error
from spark_jobs.runtime.fencing import LeaseFence
from spark_jobs.runtime.gate import WarmGate
from spark_jobs.runtime.protocols import BatchSink, Stage
from spark_jobs.runtime.source_lookup import skip_installed_source_lookup
from spark_jobs.runtime.status import StatusBoard
from streamops_contract.hosts import this_host
from streamops_contract.names import check_name
from streamops_contract.spec import JobSpec, ProcessingGuarantee
from streamops_contract.state import lease
from streamops_contract.state.layout import StateLayout

__all__ = ["BatchSink", "JobContext", "JobFailed", "Stage", "short_error"]

log = logging.getLogger("spark_jobs.runtime")
_DRIVER_ID = re.compile(r"^driver-\d+-\d+$")


class JobContext:
    def __init__(
        self,
        spark: SparkSession,
        spec: JobSpec,
        layout: StateLayout,
        *,
        from_savepoint: str | None = None,
        start_positions: dict[str, dict[str, Any]] | None = None,
        start_positions_file: Path | None = None,
        gate_file: Path | None = None,
        rehearsal: bool = False,
    ) -> None:
        self.spark = spark
        skip_installed_source_lookup(spark)  # before the build registers the job's sources
        self.rehearsal = rehearsal
        self.spec = spec
        self.layout = layout
        self.args = spec.resolved_args(state_root=str(layout.root))
        self.stages: list[Stage] = []
        self.from_savepoint = from_savepoint
        self.start_positions = start_positions or {}
        self.start_positions_file = start_positions_file
        self.gate_file = gate_file
        self._descriptors: dict[str, dict[str, Any] | None] = {}
        self.board = StatusBoard(layout, spec.name, self._identity())
        self.fence = LeaseFence(layout, spec.name, self.board)
        # a warm standby's queries are armed before the job runs, and wait for the gate
        self.gate = WarmGate(self, gate_file) if gate_file is not None else None
        self.control = ControlLoop(self)
        self.hooks: list[Callable[[Any], object]] = []

    def on_started(self, hook: Callable[[JobContext], object]) -> None:
        """Run ``hook(ctx)`` once the job holds its lease and every stage has committed its
        first batch or found nothing to do (at most :data:`HOOK_DELAY_S` after the stages
        started; in a thread: it may run Spark jobs, which then do not slow the first batches
        down). Never during a describe or a warm standby's dry build, and never in a fenced
        duplicate, so work that writes belongs here rather than in ``build``."""
        self.hooks.append(hook)

    def source_options(self, source_id: str) -> dict[str, str]:
        """Options every runtime-aware source of this job takes.

        ``start_offset`` is where a stage without a checkpoint starts (a stage added by an
        upgrade starts at the savepoint's position); Spark ignores it once a checkpoint
        exists, so it is safe to give to every stage. ``start_offsets_file`` is read when the
        query starts instead (a warm standby builds its stages before the savepoint exists).
        ``rehearsal`` marks the stages of a warm standby's rehearsal (they read only the
        newest data, :mod:`spark_jobs.sources.positions`); ``gate_file`` holds the sources of
        armed queries back until :meth:`run` opens the gate (:meth:`arm`). ``state_dir`` is
        where the sources report their upstream's state, ``on_source_reset`` the spec's choice
        when an upstream was reset (:mod:`spark_jobs.sources.source_state`), ``spool_dir``
        where they keep what they fetched for a planned batch (:mod:`spark_jobs.sources.spool`).
        """
        opts = {
            "source_id": source_id,
            "pause_file": str(self.layout.pause_file(self.job)),
            "on_source_reset": self.spec.on_source_reset,
        }
        if not self.rehearsal:
            opts["state_dir"] = str(self.layout.sources_state_dir(self.job))
            opts["spool_dir"] = str(self.layout.spool_dir(self.job))
        if source_id in self.start_positions:
            opts["start_offset"] = json.dumps(self.start_positions[source_id])
        if self.start_positions_file is not None:
            opts["start_offsets_file"] = str(self.start_positions_file)
        if self.gate_file is not None:
            opts["gate_file"] = str(self.gate_file)
        if self.rehearsal:
            opts["rehearsal"] = "true"
        return opts

    def restored_from(self, savepoint: str) -> None:
        """Record the savepoint a warm standby was released from (its stages are built; their
        sources read the start positions from ``start_positions_file``)."""
        self.from_savepoint = savepoint
        self.board.identify(from_savepoint=savepoint)

    @property
    def job(self) -> str:
        return self.spec.name

    def _identity(self) -> dict[str, Any]:
        cwd = Path.cwd().name
        sc = self.spark.sparkContext
        return {
            "version": self.spec.version,
            "code": Path(self.spec.code).name if self.spec.code else None,
            "driver_id": cwd if _DRIVER_ID.match(cwd) else None,
            "app_id": sc.applicationId,
            "host": this_host(),
            "pid": os.getpid(),
            "from_savepoint": self.from_savepoint,
            "processing_guarantee": self.spec.processing_guarantee.value,
            "trigger_interval": self.spec.trigger_interval,
        }

    def add_stage(
        self,
        name: str,
        frame: DataFrame,
        sink: BatchSink,
        *,
        output_mode: str = "append",
        stateful: bool = False,
        dry_sink: bool = False,
    ) -> None:
        """Declare a stage. ``dry_sink``: the sink, built from a context with ``rehearsal``
        set, computes what it would write and writes nothing; a warm standby's rehearsal then
        runs it (warming up its code) instead of Spark's ``noop`` sink."""
        check_name("stage", name)
        if any(s.name == name for s in self.stages):
            raise ValueError(f"stage {name!r} declared twice in job {self.job}")
        self.stages.append(Stage(name, frame, sink, output_mode, stateful, dry_sink))

    def describe(self, stage: str) -> dict[str, Any] | None:
        """The stage's state descriptor (operators, keys, aggregates), for plans and manifests
        (computed once: a stage's plan does not change while the job runs)."""
        if stage not in self._descriptors:
            self._descriptors[stage] = self._describe(stage)
        return self._descriptors[stage]

    def _describe(self, stage: str) -> dict[str, Any] | None:
        try:
            found = next(s for s in self.stages if s.name == stage)
            return describe_stage(found.frame, output_mode=found.output_mode)
        except Exception:  # a stage we cannot describe is planned as unknown, never guessed
            log.warning("could not describe stage %s of %s", stage, self.job, exc_info=True)
            return None

    def checkpoint_for(self, stage: str) -> str:
        if self.spec.processing_guarantee is ProcessingGuarantee.NONE:
            # No guarantee: state is not kept across restarts; each run starts afresh
            # (emptied when the run first starts the stage, ``queries.start_query``).
            return str(Path(tempfile.gettempdir()) / f"streamops-{self.job}-{stage}-{os.getpid()}")
        return str(self.layout.checkpoint(self.job, stage))

    # --- the lease, as the driver holds it (fencing.py) --------------------------------
    @property
    def lease(self) -> lease.Lease | None:
        return self.fence.lease

    @lease.setter
    def lease(self, value: lease.Lease | None) -> None:
        self.fence.lease = value

    @property
    def holder(self) -> str:
        return self.fence.holder

    def release_lease(self) -> None:
        self.fence.release()
