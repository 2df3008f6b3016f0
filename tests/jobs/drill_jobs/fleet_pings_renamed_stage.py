"""fleet-pings with ``vehicle-stats-1m`` renamed to ``vehicle-stats-one-minute``: the plan
shows the old stage dropped and a new one, refused without ``--allow-state-drop``."""

from __future__ import annotations

from spark_jobs import fleet_pings, pings
from spark_jobs.runtime import JobContext


def build(ctx: JobContext) -> None:
    stats = fleet_pings.windowed_stats(pings.valid(fleet_pings.ping_stream(ctx)), "2 minutes",
                                       "1 minute")  # fmt: skip
    ctx.add_stage("vehicles", fleet_pings.ping_stream(ctx), fleet_pings.vehicles_sink(ctx))
    ctx.add_stage("vehicle-stats-one-minute", stats, fleet_pings.stats_sink(ctx),
                  output_mode="update", stateful=True)  # fmt: skip
