"""fleet-pings v1: GPS pings of fleetsim-alpha (CSV files) and fleetsim-beta (HTTP).

Stages:

- ``vehicles``: the latest ping per VIN (newest event time, then sequence, wins), and
  malformed records to ``quarantine`` with their reason;
- ``vehicle-stats-1m``: per VIN, 1-minute tumbling event-time windows (pings, avg and max
  speed) with a watermark; rows later than the watermark are counted in the job status.

Args (job spec): ``alpha_dir``, ``beta_url``, ``store_url``, ``watermark`` (default
"2 minutes"), ``beta_max_records_per_batch``, ``alpha_max_files_per_batch``,
``alpha_max_file_age`` (default "7d": a late alpha file older than that, before the newest
file read, is reported instead of read); ``beta_min_records_per_batch``,
``alpha_min_files_per_batch`` and ``max_batch_delay`` (seconds, default 10): a source holds
fewer new records (files) than its minimum back, for at most ``max_batch_delay``
(:mod:`spark_jobs.sources.holdback`; default minimum 0: never held).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any

from py4j.protocol import Py4JError
from pyspark.errors import PySparkException
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StringType

from spark_jobs import pings
from spark_jobs.runtime import JobContext
from spark_jobs.sources.alpha import AlphaDataSource
from spark_jobs.sources.beta import BetaDataSource
from streamops_contract.sinks import store
from streamops_contract.sources.alpha_memory import DEFAULT_MAX_FILE_AGE

log = logging.getLogger("spark_jobs.fleet_pings")

RELEASE_UDF = "streamops_release"
RELEASE_CLASS = "streamops.udf.Release"
"""Java UDF of the classpath jar release (``java/udf/<release>``); absent → ``none``."""

VEHICLE_FIELDS = ("vin", "time", "sequence", "source", "latitude", "longitude", "speed", "heading")


def ping_stream(ctx: JobContext) -> DataFrame:
    """Both sources, parsed and validated, as one stream of pings.

    Every stage builds its own: two queries started from one streaming DataFrame share its
    plan's objects, and a task of one then failed to deserialize (``OptionalDataException``
    in a ``HashMap``) while the other query planned (tried 2026-11-25)."""
    spark, args = ctx.spark, ctx.args
    spark.dataSource.register(AlphaDataSource)
    spark.dataSource.register(BetaDataSource)
    alpha = (
        spark.readStream.format("fleet_alpha")
        .options(**ctx.source_options("fleetsim-alpha"))
        .option("path", str(args["alpha_dir"]))
        .option("max_files_per_batch", str(args.get("alpha_max_files_per_batch", 200)))
        .option("max_file_age", str(args.get("alpha_max_file_age", DEFAULT_MAX_FILE_AGE)))
        .option("min_files_per_batch", str(args.get("alpha_min_files_per_batch", 0)))
        .option("max_batch_delay", str(args.get("max_batch_delay", "")))  # "": the default
        .load()
    )
    beta = (
        spark.readStream.format("fleet_beta")
        .options(**ctx.source_options("fleetsim-beta"))
        .option("url", str(args["beta_url"]))
        .options(**pings.BETA_OPTIONS)
        .option("max_records_per_batch", str(args.get("beta_max_records_per_batch", 50000)))
        .option("min_records_per_batch", str(args.get("beta_min_records_per_batch", 0)))
        .option("max_batch_delay", str(args.get("max_batch_delay", "")))  # "": the default
        .load()
    )
    return pings.from_alpha(alpha).unionByName(pings.from_beta(beta))


def _newest(frame: DataFrame, key: Column, fields: Iterable[str], order: Column) -> DataFrame:
    """Per ``key``, the ``fields`` of the row with the greatest ``order``."""
    newest = F.max_by(F.struct(*fields), order)
    return frame.groupBy(key).agg(newest.alias("p")).select("p.*")


def latest_per_vin(valid_pings: DataFrame, fields: tuple[str, ...] = VEHICLE_FIELDS) -> DataFrame:
    return _newest(valid_pings, F.col("vin"), fields, F.struct("time", "sequence"))


QUARANTINE_FIELDS = ("source", "position", "raw", "reason")


def latest_and_invalid(batch: DataFrame, fields: tuple[str, ...] = VEHICLE_FIELDS) -> DataFrame:
    """In one aggregation (one Spark job, the sources read once): the newest valid ping per
    VIN, and every invalid record as it is (each its own group, keyed by its position)."""
    key = F.when(F.col("reason").isNull(), F.concat(F.lit("v:"), F.col("vin"))).otherwise(
        F.concat_ws(":", F.lit("q"), F.col("source"), F.col("position"))
    )
    # valid rows always have a time and a sequence: coalesce only orders the invalid ones
    order = F.struct(F.coalesce("time", F.lit(0.0)), F.coalesce("sequence", F.lit(0)))
    return _newest(batch, key.alias("_key"), dict.fromkeys((*fields, *QUARANTINE_FIELDS)), order)


def vehicles_sink(
    ctx: JobContext, fields: tuple[str, ...] = VEHICLE_FIELDS
) -> Callable[[DataFrame, int], None]:
    url, job, version = str(ctx.args["store_url"]), ctx.job, ctx.spec.version
    dry = ctx.rehearsal  # a warm standby's rehearsal: compute, write nothing

    def write(batch: DataFrame, batch_id: int) -> None:
        rows = [r.asDict() for r in latest_and_invalid(batch, fields).collect()]
        if dry:
            return
        engine = store.engine_for(url)
        bad = [{k: r[k] for k in QUARANTINE_FIELDS} for r in rows if r["reason"] is not None]
        latest = [{k: r[k] for k in fields} for r in rows if r["reason"] is None]
        store.insert_quarantine(engine, bad, job)
        store.upsert_vehicles(engine, latest, version)

    return write


def windowed_stats(
    valid_pings: DataFrame, watermark: str, size: str, slide: str | None = None
) -> DataFrame:
    """Per VIN and event-time window (tumbling, or sliding with ``slide``): pings, speeds."""
    window = F.window("event_time", size) if slide is None else F.window("event_time", size, slide)
    return (
        valid_pings.withWatermark("event_time", watermark)
        .groupBy(window.alias("w"), "vin")
        .agg(
            F.count(F.lit(1)).alias("pings"),
            F.avg("speed").alias("avg_speed"),
            F.max("speed").alias("max_speed"),
        )
        .select(
            "vin",
            (F.unix_micros("w.start") / 1_000_000).alias("window_start"),
            (F.unix_micros("w.end") / 1_000_000).alias("window_end"),
            "pings",
            "avg_speed",
            "max_speed",
        )
    )


def stats_sink(
    ctx: JobContext, table: Any = store.vehicle_stats
) -> Callable[[DataFrame, int], None]:
    url = str(ctx.args["store_url"])
    dry = ctx.rehearsal  # a warm standby's rehearsal: compute, write nothing

    def write(batch: DataFrame, batch_id: int) -> None:
        rows = batch.collect()
        if not dry:
            store.upsert_stats(store.engine_for(url), (r.asDict() for r in rows), table)

    return write


def classpath_release(spark: SparkSession) -> str:
    """The release of the classpath jar, from its Java UDF run by an executor (so both the
    driver's and the executors' classpath are exercised); ``none`` if the class is missing."""
    try:
        spark.udf.registerJavaFunction(RELEASE_UDF, RELEASE_CLASS, StringType())
        row = spark.range(1).selectExpr(f"{RELEASE_UDF}('probe') AS release").first()
    except (PySparkException, Py4JError) as exc:
        reason = str(exc).splitlines()[0] if str(exc) else exc
        log.warning("no classpath jar release (%s not loadable): %s", RELEASE_CLASS, reason)
        return "none"
    return str(row["release"]) if row and row["release"] else "none"


def report_release(ctx: JobContext) -> str | None:
    """Show the classpath jar release in the job status and the ``job_releases`` table.

    Only on a cluster: a job being described by the planner (local master) writes nothing.
    """
    if ctx.spark.sparkContext.master.startswith("local"):
        return None
    release = classpath_release(ctx.spark)
    ctx.board.annotate(classpath_release=release)
    started_at = float(ctx.board.snapshot().started_at or 0.0)
    engine = store.engine_for(str(ctx.args["store_url"]))
    store.record_release(engine, ctx.job, started_at, ctx.spec.version, release)
    log.info("job %s runs with classpath jar release %s", ctx.job, release)
    return release


def build(ctx: JobContext) -> None:
    store.engine_for(str(ctx.args["store_url"]), store.FLEET_TABLES)  # before the first batch
    ctx.on_started(report_release)
    watermark = str(ctx.args.get("watermark", "2 minutes"))
    ctx.add_stage("vehicles", ping_stream(ctx), vehicles_sink(ctx), dry_sink=True)
    ctx.add_stage(
        "vehicle-stats-1m",
        windowed_stats(pings.valid(ping_stream(ctx)), watermark, "1 minute"),
        stats_sink(ctx),
        output_mode="update",
        stateful=True,
        dry_sink=True,
    )
