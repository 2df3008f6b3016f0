"""Airflow fixtures: a migrated metadata database (once per session) and the ``STREAMOPS_*``
environment of the session's cluster for DAG runs with ``dag.test()``."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

import pytest
from support.integration import ClusterHandle


@pytest.fixture(scope="session")
def airflow_db() -> None:
    """Airflow's SQLite metadata database, migrated once per session."""
    from airflow.utils import db

    db.initdb()


@contextlib.contextmanager
def environ_set(env: dict[str, str]) -> Iterator[dict[str, str]]:
    """``env`` in ``os.environ`` for the block, the previous values back after it."""
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        yield env
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@pytest.fixture
def streamops_env(spark_cluster: ClusterHandle) -> Iterator[dict[str, str]]:
    """Point the ops library (as DAG tasks see it) at the session's cluster, for one test."""
    with environ_set(spark_cluster.settings.to_env()) as env:
        yield env
