"""fleet-pings v2: v1 plus engine diagnostic codes and a 5-minute sliding average speed.

The lab's part 5: ``Ping`` gains ``obd_codes`` (stored in ``vehicles``; the table gains
the column without losing rows). Stages, matched by name on upgrade:

- ``vehicles``: as v1, now with ``obd_codes`` (stateless: restored freely);
- ``vehicle-stats-1m``: unchanged from v1, so its state is restored from the savepoint;
- ``avg-speed-5m`` (new): per VIN, 5-minute windows sliding by 1 minute → ``avg_speed_5m``;
  it starts with empty state, reading from the savepoint's source positions;
- ``trips`` (new): per VIN, session windows: pings whose gaps stay under ``trip_gap`` (event
  time, default 5 minutes) make one trip → ``trips`` (start, end, pings, speeds, distance).
  A trip is written once it has ended, when the watermark passes its last ping plus the gap
  (Spark's session windows are append-only: a session's range changes while it grows, so
  there is no running value to upsert). A vehicle that never stops has no trip yet.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from spark_jobs import fleet_pings, pings
from spark_jobs.runtime import JobContext
from streamops_contract.sinks import store

VEHICLE_FIELDS_V2 = (*fleet_pings.VEHICLE_FIELDS, "obd_codes")
DEFAULT_TRIP_GAP = "5 minutes"


def trips(valid_pings: DataFrame, watermark: str, gap: str) -> DataFrame:
    """Per VIN, session windows of pings with gaps under ``gap``: one row per trip.

    ``distance_mi`` is the mean speed (mph) times the trip's duration: the simulators ping at
    a steady rate, so the mean of the pings' speeds is the trip's mean speed."""
    return (
        valid_pings.withWatermark("event_time", watermark)
        .groupBy(F.session_window("event_time", gap).alias("s"), "vin")
        .agg(
            F.min("time").alias("trip_start"),
            F.max("time").alias("trip_end"),
            F.count(F.lit(1)).alias("pings"),
            F.avg("speed").alias("avg_speed"),
            F.max("speed").alias("max_speed"),
        )
        .select(
            "vin", "trip_start", "trip_end", "pings", "avg_speed", "max_speed",
            (F.col("avg_speed") * (F.col("trip_end") - F.col("trip_start")) / 3600.0).alias(
                "distance_mi"
            ),
        )
    )  # fmt: skip


def trips_sink(ctx: JobContext) -> Any:
    url = str(ctx.args["store_url"])
    dry = ctx.rehearsal  # a warm standby's rehearsal: compute, write nothing

    def write(batch: DataFrame, batch_id: int) -> None:
        rows = batch.collect()
        if not dry:
            store.upsert_trips(store.engine_for(url), (r.asDict() for r in rows))

    return write


def build(ctx: JobContext) -> None:
    store.engine_for(
        str(ctx.args["store_url"]), (*store.FLEET_TABLES, store.avg_speed_5m, store.trips)
    )  # tables exist before the first batch
    ctx.on_started(fleet_pings.report_release)
    watermark = str(ctx.args.get("watermark", "2 minutes"))
    ctx.add_stage(
        "vehicles",
        fleet_pings.ping_stream(ctx),
        fleet_pings.vehicles_sink(ctx, VEHICLE_FIELDS_V2),
        dry_sink=True,
    )
    ctx.add_stage(
        "vehicle-stats-1m",
        fleet_pings.windowed_stats(
            pings.valid(fleet_pings.ping_stream(ctx)), watermark, "1 minute"
        ),
        fleet_pings.stats_sink(ctx),
        output_mode="update",
        stateful=True,
        dry_sink=True,
    )
    ctx.add_stage(
        "avg-speed-5m",
        fleet_pings.windowed_stats(
            pings.valid(fleet_pings.ping_stream(ctx)), watermark, "5 minutes", "1 minute"
        ),
        fleet_pings.stats_sink(ctx, store.avg_speed_5m),
        output_mode="update",
        stateful=True,
        dry_sink=True,
    )
    ctx.add_stage(
        "trips",
        trips(
            pings.valid(fleet_pings.ping_stream(ctx)),
            watermark,
            str(ctx.args.get("trip_gap", DEFAULT_TRIP_GAP)),
        ),
        trips_sink(ctx),
        output_mode="append",
        stateful=True,
        dry_sink=True,
    )
