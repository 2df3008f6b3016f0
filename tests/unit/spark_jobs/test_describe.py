"""Stage descriptors read from real streaming plans, on one local SparkSession (no query runs).

The stream is Spark's ``rate`` source shaped as fleet_alpha rows (``file, line, raw``) and
parsed by :func:`spark_jobs.pings.from_alpha`, so every case goes through the job's real
parsing and :mod:`spark_jobs.fleet_pings` functions. Variants of ``windowed_stats`` change
one thing each (window, key, aggregates) to check that the fingerprint moves with the state
and that the descriptor says what moved.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from spark_jobs import fleet_pings, pings
from spark_jobs.runtime.context import JobContext
from spark_jobs.runtime.describe import describe_job_stages, describe_stage
from streamops.spec import spec_from_dict
from streamops.state.layout import StateLayout

STATS_SIGNATURES = ["count(1)", "avg(double)", "max(double)"]


def ping_stream(spark: SparkSession) -> DataFrame:
    """A streaming DataFrame of parsed pings (all columns of :data:`pings.PING_COLUMNS`)."""
    rows = spark.readStream.format("rate").load()
    alpha = rows.select(
        F.lit("pings-000000000001.csv").alias("file"),
        F.col("value").alias("line"),
        F.concat_ws(",", F.col("value").cast("string"), F.lit("1HGCM82633A004352"),
                    F.lit("1700000000"), F.lit("1"), F.lit("2"), F.lit("30"), F.lit("90"),
                    F.lit("")).alias("raw"),
    )  # fmt: skip
    return pings.from_alpha(alpha)


@pytest.fixture(scope="module")
def valid(spark: SparkSession) -> DataFrame:
    return pings.valid(ping_stream(spark))


def stats(
    valid_pings: DataFrame,
    window: Column | None = None,
    keys: tuple[str, ...] = ("vin",),
    aggs: tuple[Column, ...] | None = None,
) -> DataFrame:
    """``windowed_stats`` with one part replaced (window, extra keys, aggregates)."""
    window = F.window("event_time", "1 minute") if window is None else window
    aggs = aggs or (F.count(F.lit(1)).alias("pings"), F.avg("speed").alias("avg_speed"),
                    F.max("speed").alias("max_speed"))  # fmt: skip
    return (
        valid_pings.withWatermark("event_time", "2 minutes")
        .groupBy(window.alias("w"), *keys)
        .agg(*aggs)
    )


def only_operator(desc: dict[str, Any]) -> dict[str, Any]:
    assert desc["stateful"] is True
    assert len(desc["operators"]) == 1, desc["operators"]
    return desc["operators"][0]


@pytest.fixture(scope="module")
def tumbling(valid: DataFrame) -> dict[str, Any]:
    return describe_stage(
        fleet_pings.windowed_stats(valid, "2 minutes", "1 minute"), output_mode="update"
    )


def test_windowed_stats_is_a_tumbling_window_aggregate_by_vin(tumbling: dict[str, Any]) -> None:
    op = only_operator(tumbling)
    assert op["kind"] == "window-aggregate"
    assert op["keys"] == [{"name": "vin", "type": "string"}]
    assert op["window"] == {
        "type": "tumbling", "column": "event_time", "position": 0,
        "size_s": 60, "slide_s": 60, "start_s": 0,
    }  # fmt: skip
    assert [a["signature"] for a in op["aggregates"]] == STATS_SIGNATURES
    assert [a["output"] for a in op["aggregates"]] == ["pings", "avg_speed", "max_speed"]
    assert [a["result"] for a in op["aggregates"]] == ["bigint", "double", "double"]
    assert op["aggregates"][1]["buffer"] == "struct<sum:double,count:bigint>"
    assert tumbling["watermark"] == {"column": "event_time", "delay": "2 minutes", "delay_s": 120}
    assert tumbling["unsupported"] is None
    assert len(tumbling["state_fingerprint"]) == 64


def test_descriptor_is_json_without_plan_ids(tumbling: dict[str, Any]) -> None:
    text = json.dumps(tumbling, sort_keys=True)
    assert json.loads(text) == tumbling
    assert "#" not in text  # expression ids differ per plan and must not leak in


def test_same_code_gives_the_same_fingerprint(
    spark: SparkSession, tumbling: dict[str, Any]
) -> None:
    again = fleet_pings.windowed_stats(pings.valid(ping_stream(spark)), "2 minutes", "1 minute")
    assert describe_stage(again, output_mode="update") == tumbling


def test_stateless_changes_keep_the_fingerprint(valid: DataFrame, tumbling: dict[str, Any]) -> None:
    filtered = valid.where(F.col("speed") < 200).withColumn("note", F.lit("x"))
    changed = fleet_pings.windowed_stats(filtered, "5 minutes", "1 minute")  # watermark too
    desc = describe_stage(changed.select("vin", "avg_speed"))
    assert desc["state_fingerprint"] == tumbling["state_fingerprint"]
    assert desc["watermark"]["delay_s"] == 300  # informational only
    # the variant helper mirrors windowed_stats: same state
    assert describe_stage(stats(valid))["state_fingerprint"] == tumbling["state_fingerprint"]


def test_sliding_window(valid: DataFrame, tumbling: dict[str, Any]) -> None:
    desc = describe_stage(stats(valid, window=F.window("event_time", "5 minutes", "1 minute")))
    op = only_operator(desc)
    assert op["window"]["type"] == "sliding"
    assert (op["window"]["size_s"], op["window"]["slide_s"]) == (300, 60)
    assert desc["state_fingerprint"] != tumbling["state_fingerprint"]


def test_window_size_change_moves_the_fingerprint(
    valid: DataFrame, tumbling: dict[str, Any]
) -> None:
    desc = describe_stage(fleet_pings.windowed_stats(valid, "2 minutes", "2 minutes"))
    assert only_operator(desc)["window"]["size_s"] == 120
    assert desc["state_fingerprint"] != tumbling["state_fingerprint"]


def test_session_window(valid: DataFrame, tumbling: dict[str, Any]) -> None:
    frame = stats(valid, window=F.session_window("event_time", "5 minutes"))
    desc = describe_stage(frame, output_mode="append")
    op = only_operator(desc)
    assert op["kind"] == "window-aggregate"
    assert op["window"] == {"type": "session", "column": "event_time", "gap_s": 300, "position": 0}
    assert desc["state_fingerprint"] != tumbling["state_fingerprint"]
    assert desc["unsupported"] is None
    # Spark itself refuses session windows in update mode: reported, not raised
    assert "session window" in describe_stage(frame, output_mode="update")["unsupported"]


def test_count_distinct_instead_of_avg(valid: DataFrame, tumbling: dict[str, Any]) -> None:
    aggs = (F.count(F.lit(1)).alias("pings"), F.count_distinct("speed").alias("speeds"),
            F.max("speed").alias("max_speed"))  # fmt: skip
    desc = describe_stage(stats(valid, aggs=aggs), output_mode="update")
    op = only_operator(desc)
    assert [a["signature"] for a in op["aggregates"]] == [
        "count(1)", "count(distinct double)", "max(double)",
    ]  # fmt: skip
    assert desc["state_fingerprint"] != tumbling["state_fingerprint"]
    assert "Distinct aggregations are not supported" in desc["unsupported"]


def test_aggregate_order_matters(valid: DataFrame, tumbling: dict[str, Any]) -> None:
    aggs = (F.max("speed").alias("max_speed"), F.count(F.lit(1)).alias("pings"),
            F.avg("speed").alias("avg_speed"))  # fmt: skip
    desc = describe_stage(stats(valid, aggs=aggs))
    assert desc["state_fingerprint"] != tumbling["state_fingerprint"]


def test_extra_grouping_key(valid: DataFrame, tumbling: dict[str, Any]) -> None:
    desc = describe_stage(stats(valid, keys=("vin", "source")))
    op = only_operator(desc)
    assert [k["name"] for k in op["keys"]] == ["vin", "source"]
    assert desc["state_fingerprint"] != tumbling["state_fingerprint"]


def test_plain_select_and_filter_is_stateless(valid: DataFrame) -> None:
    desc = describe_stage(valid.where(F.col("speed") > 10).select("vin", "speed"))
    assert desc["stateful"] is False
    assert desc["operators"] == []
    assert desc["state_fingerprint"] is None


def test_latest_per_vin_is_a_max_by_aggregate(valid: DataFrame) -> None:
    desc = describe_stage(fleet_pings.latest_per_vin(valid), output_mode="update")
    op = only_operator(desc)
    assert op["kind"] == "aggregate"
    assert op["window"] is None
    assert op["keys"] == [{"name": "vin", "type": "string"}]
    [agg] = op["aggregates"]
    assert agg["function"] == "max_by"
    assert agg["inputs"][1] == "struct<time:double,sequence:bigint>"
    assert desc["watermark"] is None
    assert desc["unsupported"] is None


def test_dedupe_and_stream_stream_join(spark: SparkSession, valid: DataFrame) -> None:
    marked = valid.withWatermark("event_time", "2 minutes")
    dedupe = only_operator(describe_stage(marked.dropDuplicatesWithinWatermark(["vin"])))
    assert dedupe["kind"] == "dedupe"
    assert dedupe["keys"] == [{"name": "vin", "type": "string"}]
    assert dedupe["state"] == {"within_watermark": True}

    other = pings.valid(ping_stream(spark)).select(
        F.col("vin").alias("vin2"), F.col("event_time").alias("t2")
    ).withWatermark("t2", "1 minute")  # fmt: skip
    cond = (F.col("vin") == F.col("vin2")) & F.col("t2").between(
        F.col("event_time"), F.col("event_time") + F.expr("INTERVAL 1 MINUTE")
    )
    desc = describe_stage(
        marked.select("vin", "event_time").join(other, cond), output_mode="append"
    )
    join = only_operator(desc)
    assert join["kind"] == "join"
    assert join["state"]["join_type"] == "Inner"
    assert join["state"]["right_keys"] == [{"name": "vin2", "type": "string"}]
    assert join["state"]["left_values"] == "struct<vin:string,event_time:timestamp>"
    assert [w["column"] for w in desc["watermarks"]] == ["event_time", "t2"]


def test_describe_job_stages(spark: SparkSession, valid: DataFrame, tmp_path: Any) -> None:
    spec = spec_from_dict({"name": "describe-test", "version": "1", "entrypoint": "x.y"})
    ctx = JobContext(spark, spec, StateLayout.at(tmp_path))
    ctx.add_stage("raw", valid, lambda df, i: None)
    ctx.add_stage(
        "stats",
        fleet_pings.windowed_stats(valid, "2 minutes", "1 minute"),
        lambda df, i: None,
        output_mode="update",
        stateful=True,
    )
    stages = describe_job_stages(ctx)
    assert list(stages) == ["raw", "stats"]
    assert (stages["raw"]["stateful"], stages["raw"]["declared_stateful"]) == (False, False)
    assert (stages["stats"]["stateful"], stages["stats"]["declared_stateful"]) == (True, True)
    assert not any(tmp_path.iterdir())  # describing writes no status, checkpoint or lease
