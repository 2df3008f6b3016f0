"""A job's JVM is told that no Python data source is installed (no lookup process), unless
its spec asks for the lookup; the sources it registers read as before."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from pyspark.sql import SparkSession

from spark_jobs.runtime.source_lookup import LOOKUP_CONF, skip_installed_source_lookup
from spark_jobs.runtime.warmup import WARMUP_FORMAT, WarmupDataSource


@pytest.fixture
def manager(spark: SparkSession) -> Iterator[Any]:
    """Spark's DataSourceManager object, its field reset to "not looked up" for the test and
    restored after it."""
    jvm = spark._jvm  # type: ignore[attr-defined]
    found = getattr(getattr(jvm.org.apache.spark.sql.execution.datasources,
                            "DataSourceManager$"), "MODULE$")  # fmt: skip
    before = found.dataSourceBuilders()
    getattr(found, "dataSourceBuilders_$eq")(getattr(getattr(jvm.scala, "None$"), "MODULE$"))
    yield found
    getattr(found, "dataSourceBuilders_$eq")(before)
    spark.conf.unset(LOOKUP_CONF)


def test_no_lookup_unless_the_spec_asks(spark: SparkSession, manager: Any) -> None:
    spark.conf.set(LOOKUP_CONF, "true")
    assert not skip_installed_source_lookup(spark)
    assert manager.dataSourceBuilders().isEmpty()  # Spark looks them up at first use
    spark.conf.unset(LOOKUP_CONF)
    assert skip_installed_source_lookup(spark)
    builders = manager.dataSourceBuilders()
    assert builders.isDefined() and builders.get().isEmpty()  # none installed: no lookup
    assert not skip_installed_source_lookup(spark)  # once per JVM


def test_registered_sources_still_read(spark: SparkSession, manager: Any) -> None:
    skip_installed_source_lookup(spark)
    spark.dataSource.register(WarmupDataSource)
    rows = spark.read.format(WARMUP_FORMAT).option("tasks", 3).load().collect()
    assert len(rows) == 3
