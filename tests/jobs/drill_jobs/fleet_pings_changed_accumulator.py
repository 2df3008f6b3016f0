"""fleet-pings with ``vehicle-stats-1m`` counting distinct headings instead of averaging
speed: same stage name, different accumulator, so its state cannot be restored."""

from __future__ import annotations

from pyspark.sql import functions as F

from spark_jobs import fleet_pings, pings
from spark_jobs.runtime import JobContext


def build(ctx: JobContext) -> None:
    valid = pings.valid(fleet_pings.ping_stream(ctx)).withWatermark("event_time", "2 minutes")
    stats = valid.groupBy(F.window("event_time", "1 minute").alias("w"), "vin").agg(
        F.count(F.lit(1)).alias("pings"),
        F.approx_count_distinct("heading").alias("avg_speed"),
        F.max("speed").alias("max_speed"),
    )
    ctx.add_stage("vehicles", fleet_pings.ping_stream(ctx), fleet_pings.vehicles_sink(ctx))
    ctx.add_stage("vehicle-stats-1m", stats, fleet_pings.stats_sink(ctx), output_mode="update",
                  stateful=True)  # fmt: skip
