"""bench-state: one stateful stage holding exactly ``keys`` keys, for savepoint benchmarks.

A runtime-aware generator source (honours the pause file, so savepoints drain it like any
job) emits ``rows_per_batch`` rows per batch cycling over ``keys`` keys until every key was
seen, then ``trickle_rows`` per batch (a large state with a modest input rate); the
``counts`` stage keeps a count and a sum per key (Spark state: ``keys`` rows). Args:
``keys``, ``rows_per_batch``, ``trickle_rows`` (default: ``rows_per_batch``).

A benchmark's job, not a product's: it lives outside ``spark_jobs`` and runs on a cluster
whose ``PYTHONPATH`` holds this folder (``harness.use_bench_jobs``), as entrypoint
``bench_state``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadLimit
from pyspark.sql.types import LongType, StructField, StructType

from spark_jobs.runtime import JobContext
from spark_jobs.sources.positions import REHEARSAL_RECORDS, rehearsal

SCHEMA = StructType([StructField("key", LongType(), False), StructField("n", LongType(), False)])


class _Range(InputPartition):
    def __init__(self, start: int, end: int) -> None:
        super().__init__((start, end))
        self.start, self.end = start, end


class KeysReader(DataSourceStreamReader):
    def __init__(self, options: dict[str, str]) -> None:
        self.keys = int(options["keys"])
        self.rows = int(options.get("rows_per_batch", self.keys))
        self.trickle = int(options.get("trickle_rows", self.rows))
        if rehearsal(options):
            self.rows = self.trickle = min(self.rows, REHEARSAL_RECORDS)
        self.source_id = options.get("source_id", "bench-keys")
        self.pause_file = options.get("pause_file", "")

    def initialOffset(self) -> dict:
        return {"source": self.source_id, "n": 0}

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        if self.pause_file and os.path.exists(self.pause_file):
            return start
        n = int(start["n"])
        return {"source": self.source_id, "n": n + (self.rows if n < self.keys else self.trickle)}

    def partitions(self, start: dict, end: dict) -> Sequence[InputPartition]:
        lo, hi = int(start["n"]), int(end["n"])
        step = max(1, (hi - lo + 3) // 4)
        return [_Range(a, min(a + step, hi)) for a in range(lo, hi, step)]

    def read(self, partition: InputPartition) -> Iterator[tuple]:
        assert isinstance(partition, _Range)
        keys = self.keys
        for i in range(partition.start, partition.end):
            yield i % keys, i


class KeysSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "bench_keys"

    def schema(self) -> StructType:
        return SCHEMA

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return KeysReader(dict(self.options))


def build(ctx: JobContext) -> None:
    ctx.spark.dataSource.register(KeysSource)
    keys = ctx.args.get("keys", 10000)
    rows = ctx.args.get("rows_per_batch", keys)
    frame: DataFrame = (
        ctx.spark.readStream.format("bench_keys")
        .options(**ctx.source_options("bench-keys"))
        .option("keys", str(keys))
        .option("rows_per_batch", str(rows))
        .option("trickle_rows", str(ctx.args.get("trickle_rows", rows)))
        .load()
    )
    counts = frame.groupBy("key").agg(F.count(F.lit(1)).alias("c"), F.sum("n").alias("s"))
    ctx.add_stage("counts", counts, discard, output_mode="update", stateful=True)


def discard(batch: DataFrame, batch_id: int) -> None:
    """Run the batch (that is what updates the state) and drop its rows."""
    batch.write.format("noop").mode("overwrite").save()
