"""Throwaway PostgreSQL databases for tests (importable: ``tests`` is on pytest's pythonpath)."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

PG_ADMIN_URL = os.environ.get(
    "STREAMOPS_TEST_PG_URL", "postgresql+psycopg2://postgres@127.0.0.1:5432/postgres"
)


@contextmanager
def throwaway_database(prefix: str, admin_url: str = PG_ADMIN_URL) -> Iterator[str]:
    """The URL of a fresh database named ``{prefix}_<random>``, dropped on exit.

    Skips the test when no server is reachable, except under CI (CI=true), where it fails.
    """
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import OperationalError

    name = f"{prefix}_{uuid.uuid4().hex[:10]}"
    admin = create_engine(admin_url, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
    except OperationalError as exc:
        admin.dispose()
        if os.environ.get("CI") == "true":
            pytest.fail(f"PostgreSQL at {admin_url} is required under CI: {exc.orig}")
        pytest.skip(f"no PostgreSQL server at {admin_url}: {exc.orig}")
    try:
        yield make_url(admin_url).set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()
