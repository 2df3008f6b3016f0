"""Fixtures shared by the Spark job unit tests."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    """One local SparkSession (one core, one shuffle partition, no UI, ANSI mode), stopped
    at the end of the session."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PYSPARK_PYTHON", sys.executable)
        session = (
            SparkSession.builder.master("local[1]")
            .appName("streamops-unit-tests")
            .config("spark.sql.shuffle.partitions", "1")
            .config("spark.ui.enabled", "false")
            .config("spark.sql.ansi.enabled", "true")
            .getOrCreate()
        )
        try:
            yield session
        finally:
            session.stop()
