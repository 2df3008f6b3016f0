"""A job version that plans like fleet-pings v2 but crashes in its first batch, before any
write: the upgrade must roll back to the previous version from the same savepoint.

Every stage's sink raises; an extra stateless stage reads Spark's ``rate`` source, so a first
batch (and the crash) comes even when the simulators have stopped and the restored stages idle.
"""

from __future__ import annotations

import dataclasses

from pyspark.sql import DataFrame

from spark_jobs import fleet_pings_v2
from spark_jobs.runtime import JobContext


def _crash(batch: DataFrame, batch_id: int) -> None:
    raise RuntimeError("deliberate crash in the first batch (rollback drill)")


def build(ctx: JobContext) -> None:
    fleet_pings_v2.build(ctx)
    ctx.stages[:] = [dataclasses.replace(stage, sink=_crash) for stage in ctx.stages]
    ticks = ctx.spark.readStream.format("rate").option("rowsPerSecond", 1).load()
    ctx.add_stage("crash-drill", ticks, _crash)
