"""The embedded Airflow's configuration: options from the environment, the password and
secrets files (0600, generated once), the environment every Airflow process gets, and the
wrapper that keeps a stable command line. Nothing here starts Airflow (see tests/e2e)."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from unittest.mock import ANY

import pytest

from streamops.exceptions import ConfigError
from streamops.processes import PidRecord
from streamops.settings import Settings
from streamops.stack.airflow_health import HEALTH_KEYS, stale_components, wait_for_api_server
from streamops.stack.airflow_stack import AirflowOptions, AirflowStack


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings.from_env({}, state_root=str(tmp_path / "state"), rest_port=16066)


def test_options_from_env() -> None:
    opts = AirflowOptions.from_env({"STREAMOPS_AIRFLOW_PORT": "9099"})
    assert (opts.url, opts.password) == ("http://127.0.0.1:9099", None)
    assert AirflowOptions.from_env({}).port == 8088
    with pytest.raises(ConfigError, match="STREAMOPS_AIRFLOW_PORT"):
        AirflowOptions.from_env({"STREAMOPS_AIRFLOW_PORT": "eighty"})


def test_password_is_generated_once_private_and_overridable(settings: Settings) -> None:
    stack = AirflowStack(settings, AirflowOptions())
    stack._ensure_password()
    first = stack.password()
    assert len(first) >= 12 and stack.password_file.stat().st_mode & 0o777 == 0o600
    stack._ensure_password()
    assert stack.password() == first, "generated once, then kept"
    AirflowStack(settings, AirflowOptions(password="s3cret"))._ensure_password()
    assert json.loads(stack.password_file.read_text()) == {"admin": "s3cret"}


def test_every_process_gets_the_same_secrets_and_the_stack_settings(settings: Settings) -> None:
    stack = AirflowStack(settings, AirflowOptions(port=9123, database="sqlite"))
    env, again = stack.env(), stack.env()
    assert env["AIRFLOW__API_AUTH__JWT_SECRET"] == again["AIRFLOW__API_AUTH__JWT_SECRET"]
    assert stack.secrets_file.stat().st_mode & 0o777 == 0o600
    assert env["AIRFLOW_HOME"] == str(settings.state_root / "airflow")
    assert env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"].startswith(f"sqlite:///{settings.state_root}")
    assert env["AIRFLOW__CORE__EXECUTOR"] == "LocalExecutor"
    assert env["AIRFLOW__CORE__EXECUTION_API_SERVER_URL"] == "http://127.0.0.1:9123/execution/"
    assert env["STREAMOPS_REST_PORT"] == "16066"
    assert env["AIRFLOW__CORE__DAGS_FOLDER"].endswith("/dags")


def test_supervise_passes_sigterm_on_and_returns_the_child_code(tmp_path: Path) -> None:
    child = "import signal, sys, time; signal.signal(signal.SIGTERM, lambda *a: sys.exit(7)); " \
            "open(sys.argv[1], 'w').close(); time.sleep(60)"  # fmt: skip
    ready = tmp_path / "ready"
    wrapper = "import sys; from streamops.stack.airflow_stack import supervise; " \
              f"sys.exit(supervise([sys.executable, '-c', {child!r}, {str(ready)!r}]))"  # fmt: skip
    proc = subprocess.Popen([sys.executable, "-c", wrapper])
    try:
        for _ in range(200):
            if ready.exists():
                break
            time.sleep(0.05)
        proc.terminate()
        assert proc.wait(20) == 7
    finally:
        proc.kill()


def test_the_metadata_file_is_switched_to_write_ahead_logging(tmp_path: Path) -> None:
    import sqlite3

    from streamops.stack.airflow_db import use_wal

    db = tmp_path / "airflow.db"
    sqlite3.connect(db).close()
    assert use_wal(db) == "wal"
    reader = sqlite3.connect(db)
    reader.execute("BEGIN")
    reader.execute("SELECT count(*) FROM sqlite_master").fetchone()  # holds a read snapshot
    writer = sqlite3.connect(db, timeout=0.1)
    writer.execute("CREATE TABLE t (x)")  # a rollback journal would refuse: database is locked
    writer.commit()
    writer.close()
    reader.close()


def test_a_second_prepare_runs_no_airflow_command(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``up`` on a running stack: the database is migrated and the connection current, so
    no ``airflow`` command (seconds of CPU each) runs again; a new port imports it again."""
    ran: list[str] = []

    def run(self: AirflowStack, args: list[str], what: str, timeout: float = 600) -> None:
        ran.append(" ".join(args[:2]))
        if args[:2] == ["db", "migrate"]:
            with sqlite3.connect(self.home / "airflow.db") as conn:
                conn.execute("CREATE TABLE IF NOT EXISTS alembic_version (v text)")
            conn.close()

    monkeypatch.setattr(AirflowStack, "_run", run)
    lite = AirflowOptions(database="sqlite")
    AirflowStack(settings, lite).prepare()
    assert ran == ["db migrate", "connections import"]
    AirflowStack(settings, lite).prepare()
    assert ran == ["db migrate", "connections import"]  # nothing more
    moved = settings.model_copy(update={"rest_port": 16067})
    AirflowStack(moved, lite).prepare()
    assert ran[2:] == ["connections import"]
    (settings.state_root / "airflow" / "migrated").write_text("2.0.0\n")  # another Airflow
    AirflowStack(settings, lite).prepare()
    assert ran[3:] == ["db migrate", "connections import"]
    (settings.state_root / "airflow" / "airflow.db").unlink()  # the database made anew
    AirflowStack(settings, lite).prepare()
    assert ran[5:] == ["db migrate", "connections import"]


def _record(component: str, started: datetime) -> PidRecord:
    return PidRecord(pid=1, pgid=1, name=component, kind="service", ports={},
                     started_at=started.isoformat(timespec="seconds"), cmd=[], log="")  # fmt: skip


def test_up_starts_again_what_a_restarted_database_or_a_stale_heartbeat_left_behind() -> None:
    now = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)
    old, new = now - timedelta(seconds=600), now - timedelta(seconds=10)
    running = {"api-server": _record("api-server", old), "scheduler": _record("scheduler", old),
               "triggerer": _record("triggerer", new)}  # fmt: skip
    healthy = {k: {"status": "healthy"} for k in HEALTH_KEYS.values()}
    assert stale_components(running, healthy, False, now) == ([], ANY)
    # the embedded PostgreSQL was down under them: every running component, healthy or not
    stale, why = stale_components(running, healthy, True, now)
    assert stale == ["api-server", "scheduler", "triggerer"] and "PostgreSQL" in why
    # a stale heartbeat: restarted once past the start's grace, not a component just started
    sick = {**healthy, "scheduler": {"status": "unhealthy"}, "triggerer": {"status": "unhealthy"}}
    stale, why = stale_components(running, sick, False, now)
    assert stale == ["scheduler"] and "unhealthy" in why
    assert stale_components(running, None, False, now)[0] == []  # no answer: nothing judged


def test_the_scheduler_waits_for_the_api_server_to_answer(free_port: Callable[[], int]) -> None:
    """A real HTTP server that starts listening 1.5 s late: the wait returns once it answers
    (even a 404 is an answer); with nobody on the port it gives up after its timeout."""
    port = free_port()
    server = ThreadingHTTPServer(("127.0.0.1", port), BaseHTTPRequestHandler)
    opener = threading.Timer(1.5, server.serve_forever)
    t0 = time.monotonic()
    opener.start()
    try:
        assert wait_for_api_server(f"http://127.0.0.1:{port}", timeout=30, every=0.2)
        assert 1.0 < time.monotonic() - t0 < 20
    finally:
        server.shutdown()
        server.server_close()
        opener.join()
    t0 = time.monotonic()
    assert not wait_for_api_server(f"http://127.0.0.1:{free_port()}", timeout=1, every=0.2)
    assert time.monotonic() - t0 < 10
