"""Warm standby: a new version's driver that is up before the old one stops.

Started with ``--standby TOKEN``, the driver creates its Spark session, imports the job and
builds its stages once to validate them (plans analysed, state descriptors computed), writes
``<job>/standby/TOKEN.ready.json`` and waits. It writes nothing else and holds no lease: the old
version keeps running untouched. When the ops side has taken the savepoint (old version stopped)
and prepared the checkpoints, it writes ``TOKEN.go.json`` with the savepoint name and start
positions; the driver then builds its stages for real and runs. The upgrade gap is then only the
savepoint and the first batches, not the JVM, Python and session start-up.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from pyspark.sql import SparkSession

from streamops.layout import StateLayout, read_json, write_json_atomic
from streamops.spec import JobSpec

log = logging.getLogger("spark_jobs.standby")


@dataclass(frozen=True)
class Go:
    savepoint: str
    positions: dict[str, dict[str, Any]]


def warm_up(
    spark: SparkSession, spec: JobSpec, layout: StateLayout, module: ModuleType, token: str
) -> None:
    """Build and describe every stage once (nothing starts), then announce readiness."""
    from spark_jobs.runtime.context import JobContext

    started = time.monotonic()
    dry = JobContext(spark, spec, layout)
    module.build(dry)
    stages = {stage.name: dry.describe(stage.name) for stage in dry.stages}
    ident = dry.board.snapshot()
    write_json_atomic(
        layout.standby_dir(spec.name) / f"{token}.ready.json",
        {
            "token": token,
            "version": spec.version,
            "driver_id": ident.get("driver_id"),
            "app_id": ident.get("app_id"),
            "stages": stages,
            "warm_up_s": round(time.monotonic() - started, 2),
            "at": time.time(),
        },
    )
    log.info("job %s v%s: standby %s ready (%d stages)", spec.name, spec.version, token,
             len(stages))  # fmt: skip


def wait_for_go(layout: StateLayout, job: str, token: str, poll: float = 0.1) -> Go:
    """Block until the ops side releases this standby with a savepoint to start from."""
    path = layout.standby_dir(job) / f"{token}.go.json"
    while True:
        doc = read_json(path)
        if doc:
            log.info("job %s: standby %s released, starting from savepoint %s", job, token,
                     doc["savepoint"])  # fmt: skip
            return Go(savepoint=str(doc["savepoint"]), positions=dict(doc.get("positions") or {}))
        time.sleep(poll)
