"""Fixtures shared by the Spark job unit tests."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager

import pytest
from pyspark.sql import SparkSession

from streamops.sim.beta import PingHistory, ServerThread, create_app


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


@contextmanager
def _serve_history(stream: str, app: str) -> Iterator[tuple[PingHistory, str]]:
    """A fleetsim-beta server (the product's app) on a free port over an empty in-memory log
    named ``stream``: the log, and the URL of its ``/pings``."""
    history = PingHistory(10_000, stream=stream)
    thread = ServerThread(create_app(history, app), port=0)
    thread.start()
    try:
        yield history, f"http://127.0.0.1:{thread.port}/pings"
    finally:
        thread.stop()


@pytest.fixture
def serve_history() -> Callable[[str, str], AbstractContextManager[tuple[PingHistory, str]]]:
    """``serve_history(stream, app)``: a context with a fleetsim-beta server over an empty log."""
    return _serve_history
