"""Start the executors' Python before a job's first batch needs it.

An executor runs the tasks of a Python data source in Python workers forked by a daemon it
starts on first use (a Python process that imports PySpark, then a worker per task slot that
imports the job's modules): seconds of a loaded machine's CPU, paid inside the first batch
otherwise. Spark keeps one daemon per kind of Python function: an RDD's ``map`` starts
another daemon than a data source's read, so the warm-up reads a small Python data source of
its own, as the job's sources are read. It also starts the driver's daemons that create data
sources and plan their reads. The workers import nothing of the job: that costs a worker two
seconds of CPU of a small machine (SQLAlchemy, pydantic) where its sources need a tenth.

A warm standby runs it before it rehearses. A cold start does not: run beside its build on a
small machine, it only competed with it and finished after the first batch had started the
workers anyway (``tests/perf/bench_upgrade.py``).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterator, Sequence

from pyspark.sql import SparkSession
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import IntegerType, StructField, StructType

log = logging.getLogger("spark_jobs.warmup")
EXECUTOR_WAIT_S = 60.0  # how long a warm-up waits for the executors it expects
WARMUP_FORMAT = "streamops_warmup"


class _WarmupReader(DataSourceReader):
    def __init__(self, tasks: int) -> None:
        self.tasks = tasks

    def partitions(self) -> Sequence[InputPartition]:
        return [InputPartition(i) for i in range(self.tasks)]

    def read(self, partition: InputPartition) -> Iterator[tuple[int]]:
        yield (os.getpid(),)


class WarmupDataSource(DataSource):
    """One row per task: the pid of the Python worker that ran it. Option ``tasks``: the
    number of partitions."""

    @classmethod
    def name(cls) -> str:
        return WARMUP_FORMAT

    def schema(self) -> StructType:
        return StructType([StructField("pid", IntegerType(), False)])

    def reader(self, schema: StructType) -> DataSourceReader:
        return _WarmupReader(int(self.options.get("tasks", "2")))


def executor_count(spark: SparkSession) -> int:
    """Executors registered with this driver (the driver's own block manager excluded)."""
    return int(spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size()) - 1  # type: ignore[union-attr]


def warm_executors(spark: SparkSession, expected: int, wait_s: float = EXECUTOR_WAIT_S) -> int:
    """Wait until ``expected`` executors registered (or ``wait_s`` passed), then read the
    warm-up source with two tasks per core, so every executor's data source daemon and Python
    workers are up (a worker imports the job's sources when it first reads them: a fraction
    of its start). The number of executors found."""
    started = time.monotonic()
    deadline = started + wait_s
    count = executor_count(spark)
    while count < expected and time.monotonic() < deadline:
        time.sleep(0.25)
        count = executor_count(spark)
    if count == 0:
        if expected:
            log.warning("warm-up: no executor registered within %.0fs: the first batch will "
                        "wait for them", wait_s)  # fmt: skip
        return 0
    tasks = 2 * max(spark.sparkContext.defaultParallelism, count)
    spark.dataSource.register(WarmupDataSource)
    rows = spark.read.format(WARMUP_FORMAT).option("tasks", tasks).load().collect()
    pids = {row.pid for row in rows}
    log.info("warm-up: %d executor(s) up, %d Python worker(s) started in %.1fs", count,
             len(pids), time.monotonic() - started)  # fmt: skip
    return count
