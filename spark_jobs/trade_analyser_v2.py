"""trade-analyser v2: v1's ``avg-1s`` plus the 1-minute moving average and the 1-second volume.

Stages, matched by name on upgrade (:mod:`streamops.planner`):

- ``avg-1s``: unchanged from v1 (the same :data:`~spark_jobs.trade_analyser.AVG_1S` built by
  the same code), so its state is restored from v1's savepoint;
- ``avg-1m`` (new): average price per symbol over 1-minute windows sliding by 1 second;
- ``vol-1s`` (new): summed quantity per symbol over tumbling 1-second windows.

The new stages start with empty state at the savepoint's source position: their windows are
exact for the trades after it (the first windows hold only those).
"""

from __future__ import annotations

from spark_jobs import trade_analyser
from spark_jobs.runtime import JobContext

V2_SERIES = (trade_analyser.AVG_1S, trade_analyser.AVG_1M, trade_analyser.VOL_1S)


def build(ctx: JobContext) -> None:
    trade_analyser.build_series(ctx, V2_SERIES)
