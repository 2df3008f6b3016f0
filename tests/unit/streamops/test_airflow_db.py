"""The embedded Airflow's metadata database: the choice of ``STREAMOPS_AIRFLOW_DB`` and a real
embedded PostgreSQL started, used, found running again and stopped."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import sqlalchemy as sa

from streamops.exceptions import ConfigError
from streamops.stack.airflow_db import EmbeddedPostgres, MetadataDatabase, parse_choice
from streamops.stack.airflow_stack import AirflowOptions


def test_the_choice_is_embedded_sqlite_or_a_postgresql_url() -> None:
    assert parse_choice(None) == parse_choice("") == "embedded"
    assert parse_choice(" sqlite ") == "sqlite"
    url = "postgresql+psycopg2://airflow:pw@db.example:5432/airflow"
    assert parse_choice(url) == url
    with pytest.raises(ConfigError, match="STREAMOPS_AIRFLOW_DB: 'mysql://x'"):
        parse_choice("mysql://x")
    assert AirflowOptions.from_env({"STREAMOPS_AIRFLOW_DB": "sqlite"}).database == "sqlite"
    assert AirflowOptions.from_env({}).database == "embedded"


def test_sqlite_and_a_configured_server_start_nothing(tmp_path: Path) -> None:
    lite = MetadataDatabase(tmp_path, "sqlite")
    env = lite.env()
    assert env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"] == f"sqlite:///{tmp_path / 'airflow.db'}"
    assert env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONNECT_ARGS"].endswith("SQLITE_CONNECT_ARGS")
    server = MetadataDatabase(tmp_path, "postgresql://airflow:secret@db.example/airflow")
    assert server.env() == {
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": "postgresql://airflow:secret@db.example/airflow"
    }
    assert server.where() == "PostgreSQL db.example/airflow"  # no password
    assert not (tmp_path / "pgdata").exists()


def test_the_embedded_server_starts_serves_airflow_and_stops(tmp_path: Path) -> None:
    db = MetadataDatabase(tmp_path, "embedded")
    try:
        url = db.url()
        assert url.startswith("postgresql+psycopg2://postgres@/airflow?host=")
        pid = db.postgres.pid()
        assert pid is not None and "running" in db.state()
        engine = sa.create_engine(url)
        with engine.begin() as conn:
            conn.execute(sa.text("CREATE TABLE t (x int)"))
            conn.execute(sa.text("INSERT INTO t VALUES (1)"))
        engine.dispose()
        # a second stack object (another `streamops` command) finds it running, same data
        again = EmbeddedPostgres(tmp_path / "pgdata")
        assert again.pid() == pid and again.start() == url
    finally:
        stopped = db.postgres.stop()
    assert stopped and db.postgres.pid() is None and "stopped" in db.state()
    assert not EmbeddedPostgres(tmp_path / "pgdata").stop()  # nothing to stop
    # started again on the same data directory: the table is still there
    try:
        engine = sa.create_engine(MetadataDatabase(tmp_path, "embedded").url())
        with engine.connect() as conn:
            assert conn.execute(sa.text("SELECT x FROM t")).scalar() == 1
        engine.dispose()
    finally:
        EmbeddedPostgres(tmp_path / "pgdata").stop()


def test_a_stale_pid_file_naming_another_program_is_not_the_server(tmp_path: Path) -> None:
    """A server killed with -9 leaves ``postmaster.pid``; its pid may since belong to another
    program, which ``down`` must not signal."""
    import os

    pgdata = tmp_path / "pgdata"
    pgdata.mkdir()
    (pgdata / "postmaster.pid").write_text(f"{os.getpid()}\n{pgdata}\n")  # this test's python
    server = EmbeddedPostgres(pgdata)
    assert server.pid() is None
    assert not server.stop()


def test_a_killed_server_starts_again_over_its_data(tmp_path: Path) -> None:
    """kill -9 of the postmaster: where nothing reaps it (this machine's first process is no
    init) it stays a zombie that PostgreSQL's tools take for a live server; ``url()`` (what
    ``up`` calls) starts it again, with its data, and says it did."""
    import os
    import signal

    db = MetadataDatabase(tmp_path, "embedded")
    try:
        engine = sa.create_engine(db.url())
        with engine.begin() as conn:
            conn.execute(sa.text("CREATE TABLE t (x int)"))
            conn.execute(sa.text("INSERT INTO t VALUES (7)"))
        engine.dispose()
        pid = db.postgres.pid()
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while db.postgres.pid() is not None and time.monotonic() < deadline:
            time.sleep(0.05)
        url = db.url()  # the server is gone: started again
        assert db.postgres.started_here and db.postgres.pid() not in (None, pid)
        engine = sa.create_engine(url)
        with engine.connect() as conn:
            assert conn.execute(sa.text("SELECT x FROM t")).scalar() == 7
        engine.dispose()
    finally:
        db.postgres.stop()
