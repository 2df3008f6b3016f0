"""fleet_beta's rows as fleet-pings reads them, made from ``(sequence, raw)`` records by the
source's own parse (:mod:`spark_jobs.sources.json_fields`), for tests of the job's functions."""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession

from spark_jobs import pings
from spark_jobs.sources.beta import fields_of


def beta_frame(
    spark: SparkSession, records: list[tuple[int, str]], alone: bool = False
) -> DataFrame:
    """The rows of ``records`` read as one partition, or with ``alone`` each record as a
    partition of its own (a malformed record then does not send the others to the
    one-at-a-time parse)."""
    fields = fields_of(pings.BETA_OPTIONS)
    assert fields is not None
    parts = [[r] for r in records] if alone else [records] if records else []
    rows = [tuple(row.values()) for part in parts for row in fields.batch(part).to_pylist()]
    return spark.createDataFrame(rows, fields.schema())
