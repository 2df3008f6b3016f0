"""trade-analyser v1: the 1-second moving average price per symbol of the trades producer.

Stage ``avg-1s``: per symbol, the average trade price over 1-second event-time windows
sliding by 200 ms (:data:`AVG_1S`), upserted into the store's one time-series table
``trade_series`` keyed by ``(series, symbol, window_end_ms)``. v2
(:mod:`spark_jobs.trade_analyser_v2`) declares the same ``avg-1s`` stage, built by the same
code, so a savepoint of v1 restores its state, and adds ``avg-1m`` and ``vol-1s``.

Input: the ``fleet_beta`` source (the producer is fleetsim-beta's server, :mod:`streamops.sim.
trades`) with its ``fields`` option: the source's tasks parse each trade's JSON into typed
columns, checked here. Event times are rounded to whole milliseconds before windowing, as the
oracle does, so no float rounding decides which window a trade on a boundary belongs to.
Rows the producer never sends (unparsable, no symbol, price or quantity <= 0) are dropped,
not quarantined.

Trades later than the watermark (``watermark`` arg, default "2 seconds": the producer's
clock never goes back, the lag only absorbs batching and an upgrade's replay) are dropped for
the windows already closed and counted per stage by the runtime (``late_rows`` in the job
status, from Spark's ``numRowsDroppedByWatermark``); a late trade whose window is still open is
applied. ``avg-1m`` is computed from 1-second frames (:mod:`spark_jobs.sliding_frames`): there
a trade is dropped from all its windows once its frame has closed.

Args (job spec): ``trades_url`` (…/pings of the producer), ``store_url``, ``watermark``,
``max_records_per_batch`` (default 50000: 5 s of trades at 10k/s).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from spark_jobs.runtime import JobContext
from spark_jobs.sliding_frames import frames, frames_writer
from spark_jobs.sources.beta import BetaDataSource
from streamops_contract.sinks import store

SOURCE_ID = "tradesim"
"""The source id in offsets and savepoints (every stage reads the same producer)."""
DEFAULT_WATERMARK = "2 seconds"
TRADE_FIELDS = "symbol string, time double, price double, quantity long"
"""The fields of a trade the source parses in its tasks (:mod:`spark_jobs.sources.json_fields`):
one C++ parse per partition instead of ``from_json`` in each stage's query."""


@dataclass(frozen=True, slots=True)
class Series:
    """One series of ``trade_series``: a stage of the same name, one window aggregation.

    ``slide`` None is a tumbling window. ``measure`` is ``avg_price`` (average trade price)
    or ``volume`` (summed quantity). ``by_frames``: a sliding window computed from its frames
    (:mod:`spark_jobs.sliding_frames`), not by Spark's sliding window."""

    name: str
    size: str
    slide: str | None
    measure: str
    size_ms: int
    slide_ms: int
    by_frames: bool = False


# 1 s sliding by 200 ms: each trade lands in 5 windows (1 s / 200 ms). 100 ms would give a
# finer curve but doubles the expanded rows (10 per trade: 100k rows/s at 10k trades/s), the
# open windows in state (32 symbols x (1 s + 2 s watermark) / slide: ~480 rows at 200 ms,
# ~960 at 100 ms) and the rows upserted every batch, on a 2-core machine that also runs the
# producer; 5 points a second is ample for a 1-second average.
AVG_1S = Series("avg-1s", "1 second", "200 milliseconds", "avg_price", 1000, 200)
# 60 s sliding by 1 s: by frames, one frame per symbol-second updated per trade instead of 60
# windows (Spark's sliding window): the stage cost as much as the two others together.
AVG_1M = Series("avg-1m", "1 minute", "1 second", "avg_price", 60_000, 1000, by_frames=True)
VOL_1S = Series("vol-1s", "1 second", None, "volume", 1000, 1000)
V1_SERIES = (AVG_1S,)


def parse_trades(typed: DataFrame) -> DataFrame:
    """``sequence`` and the :data:`TRADE_FIELDS` of the ``fleet_beta`` source → ``sequence,
    symbol, price, quantity, event_time`` (event time truncated to whole milliseconds, see
    module doc); rows without a symbol, a positive price and quantity or a time are dropped."""
    millis = F.round(F.col("time") * 1000).cast("long")
    parsed = typed.select(
        F.col("sequence"),
        F.col("symbol"),
        F.col("price"),
        F.col("quantity"),
        F.timestamp_millis(millis).alias("event_time"),
    )
    ok = (
        F.col("symbol").isNotNull()
        & (F.col("price") > 0)
        & (F.col("quantity") > 0)
        & F.col("event_time").isNotNull()
    )
    return parsed.where(F.coalesce(ok, F.lit(False)))


def windowed(trades: DataFrame, series: Series, watermark: str) -> DataFrame:
    """Per symbol and event-time window of ``series``: its value and trade count, as rows of
    ``trade_series`` (without ``updated_at``)."""
    if series.slide is None:
        window = F.window("event_time", series.size)
    else:
        window = F.window("event_time", series.size, series.slide)
    value = F.avg("price") if series.measure == "avg_price" else F.sum("quantity").cast("double")
    return (
        trades.withWatermark("event_time", watermark)
        .groupBy(window.alias("w"), "symbol")
        .agg(value.alias("value"), F.count(F.lit(1)).alias("trades"))
        .select(
            F.lit(series.name).alias("series"),
            "symbol",
            F.unix_millis("w.start").alias("window_start_ms"),
            F.unix_millis("w.end").alias("window_end_ms"),
            "value",
            "trades",
        )
    )


def series_writer(store_url: str, dry: bool = False) -> Callable[[DataFrame, int], None]:
    """The ``foreachBatch`` sink of every series: upsert the batch's updated windows (update
    output mode: each carries its complete running value, so a replayed batch changes
    nothing). ``dry`` (a warm standby's rehearsal): compute, write nothing."""

    def write(batch: DataFrame, batch_id: int) -> None:
        rows = batch.collect()
        if not dry:
            store.upsert_series(store.engine_for(store_url), (r.asDict() for r in rows))

    return write


def trade_stream(ctx: JobContext) -> DataFrame:
    """The producer's trades, parsed: a new ``fleet_beta`` query per call (one per stage)."""
    ctx.spark.dataSource.register(BetaDataSource)
    raw = (
        ctx.spark.readStream.format("fleet_beta")
        .options(**ctx.source_options(SOURCE_ID))
        .option("url", str(ctx.args["trades_url"]))
        .option("max_records_per_batch", str(ctx.args.get("max_records_per_batch", 50000)))
        .option("fields", TRADE_FIELDS)
        .load()
    )
    return parse_trades(raw)


def build_series(ctx: JobContext, series: Iterable[Series]) -> None:
    """Declare one stateful stage per series; v1 and v2 both build through here, so a stage
    of the same name has the same plan (and state layout) in both."""
    url = str(ctx.args["store_url"])
    # the tables exist before the first batch
    store.engine_for(url, (store.trade_series, store.trade_frames))
    watermark = str(ctx.args.get("watermark", DEFAULT_WATERMARK))
    for one in series:
        if one.by_frames:
            frame, sink = (
                frames(trade_stream(ctx), one, watermark),
                frames_writer(one, url, ctx.rehearsal),
            )
        else:
            frame, sink = (
                windowed(trade_stream(ctx), one, watermark),
                series_writer(url, ctx.rehearsal),
            )
        ctx.add_stage(
            one.name,
            frame,
            sink,
            output_mode="update",
            stateful=True,
            dry_sink=True,
        )


def build(ctx: JobContext) -> None:
    build_series(ctx, V1_SERIES)
