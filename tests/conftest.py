"""Fixtures shared by every test: free loopback ports and a throwaway PostgreSQL database."""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Callable, Iterator

import pytest


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="session")
def free_port() -> Callable[[], int]:
    """A function returning a currently free TCP port on 127.0.0.1."""
    return _free_port


PG_ADMIN_URL = os.environ.get(
    "STREAMOPS_TEST_PG_URL", "postgresql+psycopg2://postgres@127.0.0.1:5432/postgres"
)


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """URL of a fresh PostgreSQL database, dropped after the session.

    Skipped when no server is reachable, except under CI (CI=true), where it must be.
    """
    from sqlalchemy import create_engine, text
    from sqlalchemy.exc import OperationalError

    name = f"streamops_it_{uuid.uuid4().hex[:10]}"
    admin = create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
    except OperationalError as exc:
        admin.dispose()
        if os.environ.get("CI") == "true":
            raise
        pytest.skip(f"no PostgreSQL server at {PG_ADMIN_URL}: {exc.orig}")
    url = PG_ADMIN_URL.rsplit("/", 1)[0] + f"/{name}"
    try:
        yield url
    finally:
        from spark_jobs.sinks import store

        engine = store._engines.pop(url, None)
        if engine is not None:
            engine.dispose()
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()
