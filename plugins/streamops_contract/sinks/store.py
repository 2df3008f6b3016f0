"""The fleet store: ``vehicles``, ``vehicle_stats``, ``trips`` and ``quarantine`` tables.

SQLite by default, PostgreSQL by URL, through the same SQLAlchemy Core code. Every write is
keyed, so replaying a batch after a failure changes nothing:

- ``vehicles``: one row per VIN; a ping replaces the row only if it is newer, by
  ``(time, sequence)``;
- ``vehicle_stats``: one row per ``(vin, window_start)``; the streaming aggregation emits
  the window's complete running values, so an upsert replaces them;
- ``quarantine``: one row per ``(source, position)``; a replayed bad record is ignored;
- ``trips``: one row per ``(vin, trip_start)``, written once when the trip has ended;
- ``trade_series`` (the trade analyser): one row per ``(series, symbol, window_end_ms)``, the
  window's running value replaced like ``vehicle_stats``.

Each of these rows carries ``updated_at``: the database's own clock when it wrote the row
(:func:`_written_at`), so a latency read from it ends when the row was written.

A store that cannot be reached (a restarting PostgreSQL, a lost connection) is retried with a
capped backoff for up to :data:`RETRY_S` seconds, the batch waiting meanwhile: the
transaction of a failed attempt was rolled back, and the writes are keyed, so the attempt
that succeeds applies the batch once.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from sqlalchemy import (
    JSON,
    BigInteger,
    Column,
    Engine,
    Float,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    and_,
    create_engine,
    event,
    inspect,
    literal_column,
    or_,
    select,
    text,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import DBAPIError, OperationalError

metadata = MetaData()

vehicles = Table(
    "vehicles",
    metadata,
    Column("vin", String(17), primary_key=True),
    Column("time", Float, nullable=False),
    Column("sequence", BigInteger, nullable=False),
    Column("source", String(16), nullable=False),
    Column("latitude", Float, nullable=False),
    Column("longitude", Float, nullable=False),
    Column("speed", Float, nullable=False),
    Column("heading", Float, nullable=False),
    Column("obd_codes", JSON, nullable=True),
    Column("job_version", String(64), nullable=False),
    Column("updated_at", Float, nullable=False),
)

vehicle_stats = Table(
    "vehicle_stats",
    metadata,
    Column("vin", String(17), primary_key=True),
    Column("window_start", Float, primary_key=True),
    Column("window_end", Float, nullable=False),
    Column("pings", Integer, nullable=False),
    Column("avg_speed", Float, nullable=False),
    Column("max_speed", Float, nullable=False),
    Column("updated_at", Float, nullable=False),
)

avg_speed_5m = Table(
    "avg_speed_5m",
    metadata,
    *(Column(c.name, c.type, primary_key=c.primary_key, nullable=c.nullable)
      for c in vehicle_stats.columns),
)  # fmt: skip

trips = Table(
    "trips",
    metadata,
    Column("vin", String(17), primary_key=True),
    Column("trip_start", Float, primary_key=True),
    Column("trip_end", Float, nullable=False),
    Column("pings", Integer, nullable=False),
    Column("avg_speed", Float, nullable=False),
    Column("max_speed", Float, nullable=False),
    Column("distance_mi", Float, nullable=False),
    Column("updated_at", Float, nullable=False),
)
"""fleet-pings v2's ``trips`` (session windows): first and last ping time (epoch seconds)."""

trade_series = Table(
    "trade_series",
    metadata,
    Column("series", String(32), primary_key=True),
    Column("symbol", String(16), primary_key=True),
    Column("window_end_ms", BigInteger, primary_key=True),
    Column("window_start_ms", BigInteger, nullable=False),
    Column("value", Float, nullable=False),
    Column("trades", Integer, nullable=False),
    Column("updated_at", Float, nullable=False),
)
"""Every series of the trade analyser in one time-series table: ``series`` names the stage
(``avg-1s``, ``avg-1m``, ``vol-1s``), ``value`` is its average price or summed quantity over
``[window_start_ms, window_end_ms)`` (epoch milliseconds: an exact key, no float)."""

trade_frames = Table(
    "trade_frames",
    metadata,
    Column("series", String(32), primary_key=True),
    Column("symbol", String(16), primary_key=True),
    Column("frame_end_ms", BigInteger, primary_key=True),
    Column("value_sum", Float, nullable=False),
    Column("trades", Integer, nullable=False),
    Column("updated_at", Float, nullable=False),
)
"""The frames of a sliding series computed by frames (:mod:`spark_jobs.sliding_frames`): the
sum of the measure and the trade count per symbol over ``[frame_end_ms - slide,
frame_end_ms)``."""

quarantine = Table(
    "quarantine",
    metadata,
    Column("source", String(16), primary_key=True),
    Column("position", String(255), primary_key=True),
    Column("raw", Text, nullable=False),
    Column("reason", Text, nullable=False),
    Column("job", String(64), nullable=False),
    Column("received_at", Float, nullable=False),
)

_engines: dict[str, Engine] = {}
log = logging.getLogger("spark_jobs.store")
RETRY_S = 300.0
"""How long a write waits for an unreachable store before its batch fails."""
T = TypeVar("T")


_SQLITE_AWAY = ("database is locked", "unable to open database file", "disk I/O error")


def unreachable(exc: DBAPIError) -> bool:
    """Whether ``exc`` says the store could not be reached (retry) rather than that the
    statement is wrong (fail): a lost or refused connection (no SQLSTATE, or class 08 and 57P,
    the server shutting down or starting), a busy or missing SQLite file."""
    if exc.connection_invalidated:
        return True
    if not isinstance(exc, OperationalError):
        return False
    code = getattr(exc.orig, "pgcode", "") or ""
    if type(exc.orig).__module__.startswith("sqlite3"):
        return any(text in str(exc.orig) for text in _SQLITE_AWAY)
    return not code or code.startswith(("08", "57P"))


def retrying(what: str, attempt: Callable[[], T], patience: float | None = None) -> T:
    """Run ``attempt``; while the store is unreachable (a connection error), again after 0.5,
    1, 2, 4, 5, 5 ... seconds, for at most ``patience`` (default :data:`RETRY_S`)."""
    deadline = time.monotonic() + (RETRY_S if patience is None else patience)
    delay, tries = 0.5, 0
    while True:
        try:
            return attempt()
        except DBAPIError as exc:
            if not unreachable(exc):
                raise  # a wrong statement or a constraint: retrying cannot help
            tries += 1
            if time.monotonic() + delay > deadline:
                raise
            log.warning("store unreachable during %s (attempt %d: %s); retrying in %.1fs, "
                        "nothing was written", what, tries, str(exc.orig)[:200], delay)  # fmt: skip
            time.sleep(delay)
            delay = min(delay * 2, 5.0)


job_releases = Table(
    "job_releases",
    metadata,
    Column("job", String(64), primary_key=True),
    Column("started_at", Float, primary_key=True),
    Column("version", String(64), nullable=False),
    Column("classpath_release", String(64), nullable=False),
)
"""One row per driver start: the classpath jar release it runs with (``none`` if absent)."""

_lock = threading.Lock()


FLEET_TABLES = (vehicles, vehicle_stats, quarantine, job_releases)
"""What fleet-pings v1 writes; v2 adds ``avg_speed_5m`` and ``trips``."""

_ensured: set[tuple[object, str]] = set()  # (engine URL, table) created or found here


def engine_for(url: str, tables: Iterable[Table] = ()) -> Engine:
    """One engine per URL per process (SQLite gets WAL and a generous busy timeout), with
    ``tables`` created if missing. A store holds only the tables of the jobs that wrote to
    it: each job's build names its own, and every write creates its table if needed."""
    with _lock:
        engine = _engines.get(url)
        if engine is None:
            engine = _create_engine(url)
            _engines[url] = engine
    ensure_tables(engine, tables)
    return engine


def ensure_tables(engine: Engine, tables: Iterable[Table]) -> None:
    """Create the ``tables`` missing from the store (once per process and table), adding to
    an existing ``vehicles`` the columns later versions introduced."""
    url = engine.url  # hashable: no rendering on every write
    with _lock:
        missing = [t for t in tables if (url, t.name) not in _ensured]
        if not missing:
            return
        retrying("creating the tables", lambda: _prepare(engine, missing))
        _ensured.update((url, t.name) for t in missing)


def _create_engine(url: str) -> Engine:
    if url.startswith("sqlite"):
        engine = create_engine(url, connect_args={"timeout": 60})

        @event.listens_for(engine, "connect")
        def _pragmas(dbapi_conn: Any, _record: Any) -> None:
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA synchronous=NORMAL")
            cur.close()

        return engine
    return create_engine(url, pool_pre_ping=True)


def _prepare(engine: Engine, tables: list[Table]) -> None:
    metadata.create_all(engine, tables=tables)
    if vehicles in tables:
        _migrate(engine)


def _write(engine: Engine, what: str, stmt: Any, batch: list[dict[str, Any]]) -> None:
    """Execute ``stmt`` for ``batch`` in one transaction, retried while the store is away."""

    def attempt() -> None:
        with engine.begin() as conn:
            conn.execute(stmt, batch)

    ensure_tables(engine, [stmt.table])
    retrying(what, attempt)


def _migrate(engine: Engine) -> None:
    """Add columns that later job versions introduced, keeping every row."""
    cols = {c["name"] for c in inspect(engine).get_columns("vehicles")}
    if "obd_codes" not in cols:
        with engine.begin() as conn:
            conn.execute(text("ALTER TABLE vehicles ADD COLUMN obd_codes JSON"))


def _insert(engine: Engine, table: Table) -> Any:
    dialect = postgresql if engine.dialect.name == "postgresql" else sqlite
    return dialect.insert(table)


_CLOCK_SQL = {
    "sqlite": "(julianday('now') - 2440587.5) * 86400.0",
    "postgresql": "CAST(EXTRACT(EPOCH FROM clock_timestamp()) AS DOUBLE PRECISION)",
}
"""The database's clock in epoch seconds, read as it writes each row: SQLite's ``'now'``
(millisecond precision, taken per statement step, i.e. per row of an executemany), and
PostgreSQL's ``clock_timestamp()`` (the wall clock at that moment, not ``now()``, the
transaction's start)."""


def _written_at(engine: Engine) -> Any:
    """The SQL expression an ``updated_at`` takes: the database's clock when it writes the row
    (:data:`_CLOCK_SQL`), not the job's before the statement, which a slow write or a retry
    while the store is away would leave behind (the latencies read from it biased low)."""
    return literal_column(_CLOCK_SQL[engine.dialect.name], Float)


def _stamped_insert(engine: Engine, table: Table, batch: list[dict[str, Any]]) -> Any:
    """An insert of ``table`` whose ``updated_at`` is :func:`_written_at`, for rows that do
    not carry one."""
    for row in batch:
        row.pop("updated_at", None)
    return _insert(engine, table).values(updated_at=_written_at(engine))


def upsert_vehicles(engine: Engine, rows: Iterable[Mapping[str, Any]], job_version: str) -> int:
    """Keep the newest ping per VIN by ``(time, sequence)``; returns rows offered. A row's
    ``updated_at`` is the database's clock when it wrote it."""
    batch = [{**r, "job_version": job_version} for r in rows]
    if not batch:
        return 0
    stmt = _stamped_insert(engine, vehicles, batch)
    ex = stmt.excluded
    newer = or_(
        ex.time > vehicles.c.time,
        and_(ex.time == vehicles.c.time, ex.sequence > vehicles.c.sequence),
    )
    stmt = stmt.on_conflict_do_update(
        index_elements=[vehicles.c.vin],
        set_={c.name: ex[c.name] for c in vehicles.columns if c.name != "vin"},
        where=newer,
    )
    _write(engine, "the vehicles upsert", stmt, batch)
    return len(batch)


def _replace_keyed(
    engine: Engine, table: Table, keys: tuple[str, ...], rows: Iterable[Mapping[str, Any]]
) -> int:
    """Insert ``rows``, replacing every column but ``keys`` of a row already there, with
    ``updated_at`` the database's clock when it writes each."""
    batch = [dict(r) for r in rows]
    if not batch:
        return 0
    stmt = _stamped_insert(engine, table, batch)
    stmt = stmt.on_conflict_do_update(
        index_elements=[table.c[k] for k in keys],
        set_={c.name: stmt.excluded[c.name] for c in table.columns if c.name not in keys},
    )
    _write(engine, f"the {table.name} upsert", stmt, batch)
    return len(batch)


def upsert_stats(
    engine: Engine, rows: Iterable[Mapping[str, Any]], table: Table = vehicle_stats
) -> int:
    """Replace the running values of each ``(vin, window_start)`` window."""
    return _replace_keyed(engine, table, ("vin", "window_start"), rows)


def upsert_trips(engine: Engine, rows: Iterable[Mapping[str, Any]]) -> int:
    """Write each ended trip, keyed ``(vin, trip_start)`` (a replayed batch rewrites it)."""
    return _replace_keyed(engine, trips, ("vin", "trip_start"), rows)


def upsert_series(engine: Engine, rows: Iterable[Mapping[str, Any]]) -> int:
    """Replace the running value of each ``(series, symbol, window_end_ms)`` window."""
    return _replace_keyed(engine, trade_series, ("series", "symbol", "window_end_ms"), rows)


def upsert_frames(engine: Engine, rows: Iterable[Mapping[str, Any]]) -> int:
    """Replace the running sums of each ``(series, symbol, frame_end_ms)`` frame."""
    return _replace_keyed(engine, trade_frames, ("series", "symbol", "frame_end_ms"), rows)


def insert_quarantine(engine: Engine, rows: Iterable[Mapping[str, Any]], job: str) -> int:
    now = time.time()
    batch = [{**r, "job": job, "received_at": now} for r in rows]
    if not batch:
        return 0
    stmt = _insert(engine, quarantine).on_conflict_do_nothing(
        index_elements=[quarantine.c.source, quarantine.c.position]
    )
    _write(engine, "the quarantine insert", stmt, batch)
    return len(batch)


def read_table(engine: Engine, table: Table) -> list[dict[str, Any]]:
    """Every row of ``table`` (none if no job created it in this store)."""
    if not inspect(engine).has_table(table.name):
        return []
    with engine.connect() as conn:
        return [dict(r._mapping) for r in conn.execute(select(table))]


def record_release(engine: Engine, job: str, started_at: float, version: str, release: str) -> None:
    """Record the classpath jar release of one driver start (idempotent per start)."""
    row = {"job": job, "started_at": started_at, "version": version,
           "classpath_release": release}  # fmt: skip
    stmt = _insert(engine, job_releases).values(**row).on_conflict_do_nothing()
    ensure_tables(engine, [job_releases])
    with engine.begin() as conn:
        conn.execute(stmt)
