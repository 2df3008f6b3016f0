"""Sliding windows by frames: each trade updates one frame, a window adds up its frames.

A sliding window of ``size`` moving by ``slide`` holds ``size / slide`` frames, the tumbling
windows of length ``slide`` (Hazelcast Jet computes its sliding windows the same way). Spark's
own sliding window copies every event into each window it belongs to: 60 rows per trade for
``avg-1m`` (1 minute by 1 second), which made that one stage cost as much as the two others
together (``tests/perf/bench_trades.py``, ``docs/performance.md``). Here the stage's streaming
state holds the open frames only (one row per trade and symbol-second), and its sink:

1. upserts the batch's updated frames (their complete running sums, update output mode) into
   ``trade_frames`` of the job's store;
2. recomputes every window containing an updated frame from the frames stored for it, and
   upserts those windows into ``trade_series``, as a window stage would.

A replayed batch writes the same frames and windows again (idempotent), and the frames
closed before a savepoint are still in the store after a restore or a restart, so the windows
spanning it are complete. Late trades: a trade whose frame has closed (frame end at or before
the watermark) is dropped from every window and counted in ``late_rows``; Spark's sliding
window would still have added it to the windows open (the tests' oracle,
``trade_windows`` of ``tests/support/oracle.py`` with ``by_frames``, says the same).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from sqlalchemy import and_, select

from streamops_contract.sinks import store


class FramedSeries(Protocol):
    name: str
    measure: str
    size_ms: int
    slide_ms: int


def frames(trades: DataFrame, series: FramedSeries, watermark: str) -> DataFrame:
    """Per symbol and frame (tumbling ``slide``): the sum of the measure and the trade count."""
    measure = F.col("price") if series.measure == "avg_price" else F.col("quantity")
    return (
        trades.withWatermark("event_time", watermark)
        .groupBy(F.window("event_time", f"{series.slide_ms} milliseconds").alias("f"), "symbol")
        .agg(F.sum(measure.cast("double")).alias("value_sum"), F.count(F.lit(1)).alias("trades"))
        .select(
            F.lit(series.name).alias("series"),
            "symbol",
            F.unix_millis("f.end").alias("frame_end_ms"),
            "value_sum",
            "trades",
        )
    )


def windows_of(
    series: FramedSeries,
    updated: Sequence[Mapping[str, Any]],
    stored: Mapping[tuple[str, int], tuple[float, int]],
) -> list[dict[str, Any]]:
    """The ``trade_series`` rows of every window containing an ``updated`` frame, from the
    ``stored`` frames ``(symbol, frame end) -> (sum, trades)`` (which include the updated)."""
    size, slide = series.size_ms, series.slide_ms
    ends: dict[str, set[int]] = defaultdict(set)
    for frame in updated:
        first = int(frame["frame_end_ms"])
        ends[str(frame["symbol"])].update(range(first, first + size, slide))
    rows = []
    for symbol, window_ends in ends.items():
        for end in sorted(window_ends):
            total, count = 0.0, 0
            for frame_end in range(end - size + slide, end + 1, slide):
                got = stored.get((symbol, frame_end))
                if got is not None:
                    total += got[0]
                    count += got[1]
            if count:
                value = total / count if series.measure == "avg_price" else total
                rows.append({"series": series.name, "symbol": symbol, "window_start_ms": end - size,
                             "window_end_ms": end, "value": value, "trades": count})  # fmt: skip
    return rows


def stored_frames(
    engine: Any, series: str, after_ms: int, until_ms: int
) -> dict[tuple[str, int], tuple[float, int]]:
    """The frames of ``series`` ending in ``(after_ms, until_ms]``."""
    t = store.trade_frames
    query = select(t.c.symbol, t.c.frame_end_ms, t.c.value_sum, t.c.trades).where(
        and_(t.c.series == series, t.c.frame_end_ms > after_ms, t.c.frame_end_ms <= until_ms)
    )
    with engine.connect() as conn:
        return {(s, int(e)): (float(v), int(n)) for s, e, v, n in conn.execute(query)}


def frames_writer(
    series: FramedSeries, store_url: str, dry: bool = False
) -> Callable[[DataFrame, int], None]:
    """The ``foreachBatch`` sink of a framed series (module doc). ``dry`` (a warm standby's
    rehearsal): compute, write nothing."""

    def write(batch: DataFrame, batch_id: int) -> None:
        updated = [r.asDict() for r in batch.collect()]
        if dry or not updated:
            return
        engine = store.engine_for(store_url)
        store.upsert_frames(engine, updated)
        first = min(int(f["frame_end_ms"]) for f in updated)
        last = max(int(f["frame_end_ms"]) for f in updated)
        stored = stored_frames(
            engine, series.name, first - series.size_ms, last + series.size_ms - series.slide_ms
        )
        store.upsert_series(engine, windows_of(series, updated, stored))

    return write
