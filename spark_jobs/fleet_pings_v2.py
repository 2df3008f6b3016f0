"""fleet-pings v2: v1 plus engine diagnostic codes and a 5-minute sliding average speed.

The lab's part 5: ``Ping`` gains ``obd_codes`` (stored in ``vehicles``; the table gains
the column without losing rows). Stages, matched by name on upgrade:

- ``vehicles``: as v1, now with ``obd_codes`` (stateless: restored freely);
- ``vehicle-stats-1m``: unchanged from v1, so its state is restored from the savepoint;
- ``avg-speed-5m`` (new): per VIN, 5-minute windows sliding by 1 minute → ``avg_speed_5m``;
  it starts with empty state, reading from the savepoint's source positions.
"""

from __future__ import annotations

from spark_jobs import fleet_pings, pings
from spark_jobs.runtime import JobContext
from spark_jobs.sinks import store

VEHICLE_FIELDS_V2 = (*fleet_pings.VEHICLE_FIELDS, "obd_codes")


def build(ctx: JobContext) -> None:
    store.engine_for(str(ctx.args["store_url"]))
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
