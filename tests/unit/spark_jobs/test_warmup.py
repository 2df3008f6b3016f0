"""The executors' warm-up: a small Python data source read, one row per task."""

from __future__ import annotations

import os

from pyspark.sql import SparkSession

from spark_jobs.runtime.warmup import WARMUP_FORMAT, WarmupDataSource, warm_executors


def test_the_warmup_source_runs_one_python_task_per_partition(spark: SparkSession) -> None:
    spark.dataSource.register(WarmupDataSource)
    frame = spark.read.format(WARMUP_FORMAT).option("tasks", 3).load()
    assert frame.rdd.getNumPartitions() == 3
    rows = frame.collect()
    assert len(rows) == 3 and all(row.pid > 0 and row.pid != os.getpid() for row in rows)


def test_without_executors_nothing_is_run(spark: SparkSession) -> None:
    # local mode: the driver runs the tasks itself, no executor ever registers
    assert warm_executors(spark, expected=0, wait_s=0.1) == 0
