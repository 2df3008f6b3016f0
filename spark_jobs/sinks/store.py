"""The fleet store: ``vehicles``, ``vehicle_stats`` and ``quarantine`` tables.

SQLite by default, PostgreSQL by URL, through the same SQLAlchemy Core code. Every write is
keyed, so replaying a batch after a failure changes nothing:

- ``vehicles``: one row per VIN; a ping replaces the row only if it is newer, by
  ``(time, sequence)``;
- ``vehicle_stats``: one row per ``(vin, window_start)``; the streaming aggregation emits
  the window's complete running values, so an upsert replaces them;
- ``quarantine``: one row per ``(source, position)``; a replayed bad record is ignored.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Mapping
from typing import Any

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
    or_,
    select,
    text,
)
from sqlalchemy.dialects import postgresql, sqlite

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


def engine_for(url: str) -> Engine:
    """One engine per URL per process; SQLite gets WAL and a generous busy timeout."""
    with _lock:
        engine = _engines.get(url)
        if engine is None:
            engine = _create_engine(url)
            metadata.create_all(engine)
            _migrate(engine)
            _engines[url] = engine
        return engine


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


def _migrate(engine: Engine) -> None:
    """Add columns that later job versions introduced, keeping every row."""
    cols = {c["name"] for c in inspect(engine).get_columns("vehicles")}
    if "obd_codes" not in cols:
        with engine.begin() as conn:
            conn.execute(text("ALTER TABLE vehicles ADD COLUMN obd_codes JSON"))


def _insert(engine: Engine, table: Table) -> Any:
    dialect = postgresql if engine.dialect.name == "postgresql" else sqlite
    return dialect.insert(table)


def upsert_vehicles(engine: Engine, rows: Iterable[Mapping[str, Any]], job_version: str) -> int:
    """Keep the newest ping per VIN by ``(time, sequence)``; returns rows offered."""
    now = time.time()
    batch = [{**r, "job_version": job_version, "updated_at": now} for r in rows]
    if not batch:
        return 0
    stmt = _insert(engine, vehicles)
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
    with engine.begin() as conn:
        conn.execute(stmt, batch)
    return len(batch)


def upsert_stats(
    engine: Engine, rows: Iterable[Mapping[str, Any]], table: Table = vehicle_stats
) -> int:
    """Replace the running values of each ``(vin, window_start)`` window."""
    now = time.time()
    batch = [{**r, "updated_at": now} for r in rows]
    if not batch:
        return 0
    stmt = _insert(engine, table)
    keys = ("vin", "window_start")
    stmt = stmt.on_conflict_do_update(
        index_elements=[table.c[k] for k in keys],
        set_={c.name: stmt.excluded[c.name] for c in table.columns if c.name not in keys},
    )
    with engine.begin() as conn:
        conn.execute(stmt, batch)
    return len(batch)


def insert_quarantine(engine: Engine, rows: Iterable[Mapping[str, Any]], job: str) -> int:
    now = time.time()
    batch = [{**r, "job": job, "received_at": now} for r in rows]
    if not batch:
        return 0
    stmt = _insert(engine, quarantine).on_conflict_do_nothing(
        index_elements=[quarantine.c.source, quarantine.c.position]
    )
    with engine.begin() as conn:
        conn.execute(stmt, batch)
    return len(batch)


def read_table(engine: Engine, table: Table) -> list[dict[str, Any]]:
    with engine.connect() as conn:
        return [dict(r._mapping) for r in conn.execute(select(table))]


def record_release(
    engine: Engine, job: str, started_at: float, version: str, release: str
) -> None:
    """Record the classpath jar release of one driver start (idempotent per start)."""
    row = {"job": job, "started_at": started_at, "version": version,
           "classpath_release": release}  # fmt: skip
    stmt = _insert(engine, job_releases).values(**row).on_conflict_do_nothing()
    with engine.begin() as conn:
        conn.execute(stmt)
