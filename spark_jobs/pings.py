"""Pings: parsing the raw records of both sources and validating them, in Spark expressions.

Both sources are parsed into the same string columns, then validated in one place. A row
that fails gets a ``reason`` (the first rule it breaks) and goes to quarantine with its raw
input; a valid row has ``reason`` null. Casts are ``try_cast`` so a bad field never fails
a batch (Spark 4 runs with ANSI mode on).
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, StringType, StructField, StructType

FIELDS = ("sequence", "vin", "time", "latitude", "longitude", "speed", "heading", "obd_codes")
VIN_PATTERN = r"^[A-HJ-NPR-Z0-9]{17}$"
_BETA_JSON = StructType([StructField(f, StringType()) for f in FIELDS])

PING_COLUMNS = (
    "source", "position", "sequence", "vin", "time", "event_time", "latitude", "longitude",
    "speed", "heading", "obd_codes", "raw", "reason",
)  # fmt: skip


def from_beta(df: DataFrame) -> DataFrame:
    """``(sequence, raw)`` rows of fleet_beta → parsed, validated pings."""
    obj = F.from_json(F.col("raw"), _BETA_JSON, {"mode": "PERMISSIVE"})
    obd = F.from_json(obj["obd_codes"], ArrayType(StringType()))
    parsed = df.select(
        F.lit("beta").alias("source"),
        F.col("sequence").cast("string").alias("position"),
        F.col("sequence").alias("framed_sequence"),
        F.col("raw"),
        # from_json is PERMISSIVE: bad input gives a struct of nulls, never null itself.
        F.json_object_keys(F.col("raw")).isNull().alias("_unparsed"),
        F.lit(8).alias("_columns"),
        *(obj[f].alias(f"_{f}") for f in FIELDS if f != "obd_codes"),
        F.coalesce(obd, F.array().cast("array<string>")).alias("obd_codes"),
        (obj["obd_codes"].isNotNull() & obd.isNull()).alias("_obd_bad"),
    )
    return _validate(parsed)


def from_alpha(df: DataFrame) -> DataFrame:
    """``(file, line, raw)`` rows of fleet_alpha (CSV) → parsed, validated pings."""
    parts = F.split(F.col("raw"), ",", -1)
    obd_text = F.coalesce(F.trim(F.get(parts, 7)), F.lit(""))
    obd = F.when(obd_text == "", F.array().cast("array<string>")).otherwise(F.split(obd_text, ";"))
    parsed = df.select(
        F.lit("alpha").alias("source"),
        F.concat_ws(":", F.col("file"), F.col("line").cast("string")).alias("position"),
        F.lit(None).cast("long").alias("framed_sequence"),
        F.col("raw"),
        F.lit(False).alias("_unparsed"),
        F.size(parts).alias("_columns"),
        *(F.trim(F.get(parts, i)).alias(f"_{f}") for i, f in enumerate(FIELDS[:7])),
        obd.alias("obd_codes"),
        F.lit(False).alias("_obd_bad"),
    )
    return _validate(parsed)


def _in_range(c: Column, lo: float, hi: float, hi_inclusive: bool = True) -> Column:
    upper = (c <= hi) if hi_inclusive else (c < hi)
    return c.isNotNull() & (c >= lo) & upper


def _validate(parsed: DataFrame) -> DataFrame:
    seq = F.coalesce(F.col("framed_sequence"), F.col("_sequence").try_cast("long"))
    time = F.col("_time").try_cast("double")
    lat = F.col("_latitude").try_cast("double")
    lon = F.col("_longitude").try_cast("double")
    speed = F.col("_speed").try_cast("double")
    heading = F.col("_heading").try_cast("double")
    vin = F.col("_vin")
    rules: list[tuple[Column, str]] = [
        (F.col("_unparsed"), "not a JSON object"),
        (F.col("_columns") != 8, "expected 8 comma-separated fields"),
        (seq.isNull(), "sequence is not an integer"),
        (vin.isNull() | (vin == ""), "vin is missing"),
        (~vin.rlike(VIN_PATTERN), "vin is not 17 VIN characters"),
        (~_in_range(time, 1.0, 1e11), "time is not epoch seconds in (0, 1e11]"),
        (~_in_range(lat, -90.0, 90.0), "latitude is not a number in [-90, 90]"),
        (~_in_range(lon, -180.0, 180.0), "longitude is not a number in [-180, 180]"),
        (~_in_range(speed, 0.0, 500.0), "speed is not a number in [0, 500]"),
        (~_in_range(heading, 0.0, 360.0, False), "heading is not a number in [0, 360)"),
        (F.col("_obd_bad"), "obd_codes is not a list of strings"),
    ]
    reason = F.coalesce(
        *(F.when(F.coalesce(broken, F.lit(True)), F.lit(why)) for broken, why in rules)
    )
    return parsed.select(
        "source",
        "position",
        seq.alias("sequence"),
        vin.alias("vin"),
        time.alias("time"),
        F.when(reason.isNull(), F.timestamp_seconds(time)).alias("event_time"),
        lat.alias("latitude"),
        lon.alias("longitude"),
        speed.alias("speed"),
        heading.alias("heading"),
        "obd_codes",
        "raw",
        reason.alias("reason"),
    )


def valid(pings: DataFrame) -> DataFrame:
    return pings.where(F.col("reason").isNull())


def invalid(pings: DataFrame) -> DataFrame:
    return pings.where(F.col("reason").isNotNull())
