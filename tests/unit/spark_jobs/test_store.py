"""The fleet store on real SQLite and PostgreSQL: keyed, idempotent writes and migration.

Every test runs against a fresh SQLite file and a fresh PostgreSQL schema (in a database
created for this module on the session's PostgreSQL, ``pg_admin_url``, and dropped after it).
``engine_for`` caches one engine per URL, so each test uses its own URL; the engines are
disposed at teardown.
"""

from __future__ import annotations

import random
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import (
    BigInteger,
    Column,
    Float,
    MetaData,
    String,
    Table,
    create_engine,
    insert,
    inspect,
    text,
)
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.exc import DBAPIError, OperationalError
from support.postgres import cuttable_link, fails_the_test, throwaway_database

from streamops.sim.fleet import Fleet, Ping
from streamops_contract.sinks import store

VEHICLES = 4
ROUNDS = 3


@dataclass(frozen=True)
class Store:
    """One test's database: its URL and the engine ``engine_for`` made for it."""

    url: str
    dialect: str

    @property
    def engine(self) -> Engine:
        return store.engine_for(self.url, store.FLEET_TABLES)


@pytest.fixture(scope="module")
def pg_database(pg_admin_url: str) -> Iterator[str]:
    """A fresh PostgreSQL database for this module, on the session's server."""
    with fails_the_test(), throwaway_database("streamops_unit", pg_admin_url) as url:
        yield url


@pytest.fixture(params=["sqlite", "postgresql"])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    """An empty store: a new SQLite file, or a new schema in the module's PG database."""
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'fleet.db'}"
    else:
        database: str = request.getfixturevalue("pg_database")
        schema = f"t_{uuid.uuid4().hex[:10]}"
        plain = create_engine(database)
        with plain.begin() as conn:
            conn.execute(text(f"CREATE SCHEMA {schema}"))
        plain.dispose()
        url = f"{database}?options=-csearch_path%3D{schema}"
    try:
        yield Store(url, request.param)
    finally:
        store.engine_for(url).dispose()


def fleet_pings(rounds: int = ROUNDS, vehicles: int = VEHICLES) -> list[list[Ping]]:
    """``rounds`` batches of one ping per vehicle each, in time order (real fleet pings)."""
    fleet = Fleet(seed=11, vehicles=vehicles)
    t0, seq = 1_700_000_000.0, 0
    batches = []
    for r in range(rounds):
        batch = []
        for v in range(vehicles):
            seq += 1
            batch.append(fleet.next_ping(seq, t0 + r * 5 + v * 0.001))
        batches.append(batch)
    return batches


def vehicle_row(ping: Ping, source: str = "alpha") -> dict[str, Any]:
    return {**ping.to_dict(), "source": source}


def vehicles_by_vin(db: Store) -> dict[str, dict[str, Any]]:
    return {r["vin"]: r for r in store.read_table(db.engine, store.vehicles)}


def newest_per_vin(batches: list[list[Ping]]) -> dict[str, Ping]:
    newest: dict[str, Ping] = {}
    for ping in (p for batch in batches for p in batch):
        if ping.vin not in newest or (ping.time, ping.sequence) > (
            newest[ping.vin].time,
            newest[ping.vin].sequence,
        ):
            newest[ping.vin] = ping
    return newest


def assert_holds(db: Store, expected: dict[str, Ping]) -> None:
    rows = vehicles_by_vin(db)
    assert set(rows) == set(expected)
    for vin, ping in expected.items():
        row = rows[vin]
        assert (row["time"], row["sequence"]) == (ping.time, ping.sequence)
        assert (row["latitude"], row["longitude"]) == (ping.latitude, ping.longitude)
        assert (row["speed"], row["heading"]) == (ping.speed, ping.heading)
        assert row["obd_codes"] == list(ping.obd_codes)


# --- engines -------------------------------------------------------------------------------
def test_engine_for_caches_per_url_and_creates_the_tables_named(db: Store) -> None:
    engine = store.engine_for(db.url)
    assert engine.dialect.name == db.dialect
    assert inspect(engine).get_table_names() == []  # an engine alone creates nothing
    assert store.engine_for(db.url, store.FLEET_TABLES) is engine
    # a v1 store has v1's tables only: v2's and the trade analyser's come with their jobs
    assert set(inspect(engine).get_table_names()) == {t.name for t in store.FLEET_TABLES}
    assert store.read_table(engine, store.trips) == []  # read, still not created
    store.upsert_trips(engine, [{"vin": "1HGCM82633A004352", "trip_start": 1.0,
                                 "trip_end": 2.0, "pings": 2, "avg_speed": 10.0,
                                 "max_speed": 12.0, "distance_mi": 0.01}])  # fmt: skip
    assert "trips" in inspect(engine).get_table_names()  # a write creates its table


# --- vehicles ------------------------------------------------------------------------------
@pytest.mark.parametrize("order", ["forward", "reverse", "shuffled"])
def test_vehicles_keep_newest_regardless_of_arrival_order(db: Store, order: str) -> None:
    batches = fleet_pings()
    arriving = {"forward": batches, "reverse": batches[::-1]}.get(order)
    if arriving is None:
        arriving = batches[:]
        random.Random(3).shuffle(arriving)
    for i, batch in enumerate(arriving):
        assert store.upsert_vehicles(db.engine, [vehicle_row(p) for p in batch], f"v{i}") == len(
            batch
        )
    assert_holds(db, newest_per_vin(batches))
    newest_batch = arriving.index(batches[-1])
    assert {r["job_version"] for r in vehicles_by_vin(db).values()} == {f"v{newest_batch}"}


def test_vehicles_newest_wins_within_one_batch(db: Store) -> None:
    batches = fleet_pings()
    mixed = [p for batch in reversed(batches) for p in batch]  # newest first
    store.upsert_vehicles(db.engine, [vehicle_row(p) for p in mixed], "v1")
    assert_holds(db, newest_per_vin(batches))


def test_replaying_a_batch_changes_nothing(db: Store) -> None:
    batches = fleet_pings()
    for batch in batches:
        store.upsert_vehicles(db.engine, [vehicle_row(p) for p in batch], "v1")
    before = store.read_table(db.engine, store.vehicles)
    for batch in batches:  # a replay after a failure, even under a new job version
        store.upsert_vehicles(db.engine, [vehicle_row(p) for p in batch], "v2")
    after = store.read_table(db.engine, store.vehicles)
    key = "vin"
    assert sorted(after, key=lambda r: r[key]) == sorted(before, key=lambda r: r[key])


def test_equal_time_higher_sequence_wins(db: Store) -> None:
    (ping,) = fleet_pings(rounds=1, vehicles=1)[0]
    first = vehicle_row(ping) | {"sequence": 5, "speed": 10.0}
    lower = vehicle_row(ping) | {"sequence": 3, "speed": 20.0, "source": "beta"}
    higher = vehicle_row(ping) | {"sequence": 9, "speed": 30.0, "source": "beta"}
    older_but_higher = vehicle_row(ping) | {"time": ping.time - 1, "sequence": 99, "speed": 40.0}
    for row in (first, lower):
        store.upsert_vehicles(db.engine, [row], "v1")
    assert vehicles_by_vin(db)[ping.vin]["sequence"] == 5
    store.upsert_vehicles(db.engine, [higher], "v1")
    store.upsert_vehicles(db.engine, [older_but_higher], "v1")
    row = vehicles_by_vin(db)[ping.vin]
    assert (row["sequence"], row["speed"], row["source"]) == (9, 30.0, "beta")


def test_vehicle_rows_without_obd_codes(db: Store) -> None:
    """The job's sink sends the fields of VEHICLE_FIELDS only (no ``obd_codes``)."""
    (ping,) = fleet_pings(rounds=1, vehicles=1)[0]
    row = {k: v for k, v in vehicle_row(ping).items() if k != "obd_codes"}
    store.upsert_vehicles(db.engine, [row], "v1")
    assert vehicles_by_vin(db)[ping.vin]["obd_codes"] is None


def test_obd_codes_round_trip(db: Store) -> None:
    (ping,) = fleet_pings(rounds=1, vehicles=1)[0]
    store.upsert_vehicles(db.engine, [vehicle_row(ping) | {"obd_codes": ["P0300", "C0035"]}], "1")
    assert vehicles_by_vin(db)[ping.vin]["obd_codes"] == ["P0300", "C0035"]


def test_empty_batches_write_nothing(db: Store) -> None:
    assert store.upsert_vehicles(db.engine, [], "v1") == 0
    assert store.upsert_stats(db.engine, []) == 0
    assert store.insert_quarantine(db.engine, [], "job") == 0
    for table in (store.vehicles, store.vehicle_stats, store.quarantine):
        assert store.read_table(db.engine, table) == []


# --- vehicle_stats -------------------------------------------------------------------------
def stats_row(vin: str, start: float, pings: int, avg: float, top: float) -> dict[str, Any]:
    return {"vin": vin, "window_start": start, "window_end": start + 60, "pings": pings,
            "avg_speed": avg, "max_speed": top}  # fmt: skip


def test_stats_upsert_replaces_the_window_values(db: Store) -> None:
    vin = fleet_pings(rounds=1, vehicles=1)[0][0].vin
    t0 = 1_700_000_040.0
    assert store.upsert_stats(db.engine, [stats_row(vin, t0, 3, 50.0, 60.0),
                                          stats_row(vin, t0 + 60, 1, 20.0, 20.0)]) == 2  # fmt: skip
    store.upsert_stats(db.engine, [stats_row(vin, t0, 5, 40.0, 70.0)])
    rows = {r["window_start"]: r for r in store.read_table(db.engine, store.vehicle_stats)}
    assert set(rows) == {t0, t0 + 60}
    assert (rows[t0]["pings"], rows[t0]["avg_speed"], rows[t0]["max_speed"]) == (5, 40.0, 70.0)
    assert rows[t0]["window_end"] == t0 + 60
    assert (rows[t0 + 60]["pings"], rows[t0 + 60]["avg_speed"]) == (1, 20.0)


def test_stats_replay_is_idempotent(db: Store) -> None:
    rows = [stats_row("1F" + "0" * 15, 60.0 * k, k, 10.0 * k, 11.0 * k) for k in range(1, 4)]
    store.upsert_stats(db.engine, rows)
    store.upsert_stats(db.engine, rows)
    held = store.read_table(db.engine, store.vehicle_stats)
    assert sorted((r["window_start"], r["pings"]) for r in held) == [(60.0, 1), (120.0, 2),
                                                                       (180.0, 3)]  # fmt: skip


# --- updated_at: the database's clock when it writes the row ----------------------------
def series_row(end_ms: int) -> dict[str, Any]:
    return {"series": "avg-1s", "symbol": "ACME", "window_end_ms": end_ms,
            "window_start_ms": end_ms - 1000, "value": 10.5, "trades": 3}  # fmt: skip


def hold_writes(db: Store, table: str) -> Callable[[], None]:
    """Another connection holding ``table`` against writes (SQLite: the database's write
    lock; PostgreSQL: the table locked); returns how to let go."""
    if db.dialect == "sqlite":
        raw = sqlite3.connect(make_url(db.url).database or "", isolation_level=None)
        raw.execute("BEGIN IMMEDIATE")

        def let_go_sqlite() -> None:
            raw.execute("ROLLBACK")
            raw.close()

        return let_go_sqlite
    engine = create_engine(db.url)
    conn = engine.connect()
    conn.execute(text(f"LOCK TABLE {table} IN EXCLUSIVE MODE"))

    def let_go_postgresql() -> None:
        conn.rollback()
        conn.close()
        engine.dispose()

    return let_go_postgresql


@pytest.mark.parametrize("table", ["vehicles", "trade_series"])
def test_updated_at_is_stamped_when_the_row_is_written(db: Store, table: str) -> None:
    """A write held back by another writer stamps its rows when it writes them, after the
    other let go, not when it was asked (the latency the benchmarks read from ``updated_at``
    would end too early)."""
    store.engine_for(db.url, [*store.FLEET_TABLES, store.trade_series])  # no DDL under the lock
    ping = fleet_pings(rounds=1, vehicles=1)[0][0]
    failed: list[BaseException] = []

    def write() -> None:
        try:
            if table == "vehicles":
                store.upsert_vehicles(db.engine, [vehicle_row(ping)], "1")
            else:
                store.upsert_series(db.engine, [series_row(1_700_000_001_000)])
        except BaseException as exc:  # re-raised below, in the test's thread
            failed.append(exc)

    let_go = hold_writes(db, table)
    writer = threading.Thread(target=write)
    try:
        writer.start()
        time.sleep(1.0)  # the write is asked meanwhile and waits (not an assertion)
        released = time.time()
    finally:
        let_go()
    writer.join(60)
    assert not writer.is_alive() and not failed, failed
    (row,) = store.read_table(db.engine, getattr(store, table))
    # the database's clock: SQLite's in whole milliseconds
    assert released - 0.002 <= row["updated_at"] <= time.time()


def test_updated_at_moves_only_with_the_row(db: Store) -> None:
    """A replayed (older) ping leaves the row and its stamp as they were; a newer one
    restamps it."""
    first, second = fleet_pings(rounds=2, vehicles=1)
    store.upsert_vehicles(db.engine, [vehicle_row(first[0])], "1")
    (stamped,) = store.read_table(db.engine, store.vehicles)
    store.upsert_vehicles(db.engine, [vehicle_row(first[0])], "1")
    assert store.read_table(db.engine, store.vehicles) == [stamped]
    store.upsert_vehicles(db.engine, [vehicle_row(second[0])], "1")
    (newer,) = store.read_table(db.engine, store.vehicles)
    assert newer["updated_at"] >= stamped["updated_at"]
    assert newer["sequence"] == second[0].sequence


# --- quarantine ----------------------------------------------------------------------------
def bad_record(source: str, position: str, reason: str) -> dict[str, Any]:
    return {"source": source, "position": position, "raw": f"raw of {position}", "reason": reason}


def test_quarantine_is_idempotent_per_source_and_position(db: Store) -> None:
    first = [
        bad_record("alpha", "pings-000000000001.csv:3", "vin is missing"),
        bad_record("beta", "17", "latitude is not a number in [-90, 90]"),
    ]
    assert store.insert_quarantine(db.engine, first, "fleet-pings") == 2
    replay = [
        bad_record("alpha", "pings-000000000001.csv:3", "another reason"),
        bad_record("beta", "17", "another reason"),
        bad_record("alpha", "17", "same position, other source"),
    ]
    store.insert_quarantine(db.engine, replay, "other-job")
    rows = {(r["source"], r["position"]): r for r in store.read_table(db.engine, store.quarantine)}
    assert set(rows) == {("alpha", "pings-000000000001.csv:3"), ("beta", "17"), ("alpha", "17")}
    assert rows[("alpha", "pings-000000000001.csv:3")]["reason"] == "vin is missing"
    assert rows[("beta", "17")]["job"] == "fleet-pings"
    assert rows[("alpha", "17")]["job"] == "other-job"


# --- migration -----------------------------------------------------------------------------
def create_old_vehicles(url: str, rows: list[dict[str, Any]]) -> None:
    """The ``vehicles`` table of job versions before ``obd_codes`` existed, with rows."""
    old = MetaData()
    table = Table(
        "vehicles", old,
        Column("vin", String(17), primary_key=True),
        Column("time", Float, nullable=False),
        Column("sequence", BigInteger, nullable=False),
        Column("source", String(16), nullable=False),
        Column("latitude", Float, nullable=False),
        Column("longitude", Float, nullable=False),
        Column("speed", Float, nullable=False),
        Column("heading", Float, nullable=False),
        Column("job_version", String(64), nullable=False),
        Column("updated_at", Float, nullable=False),
    )  # fmt: skip
    engine = create_engine(url)
    try:
        old.create_all(engine)
        with engine.begin() as conn:
            conn.execute(insert(table), rows)
    finally:
        engine.dispose()


def test_obd_codes_migration_keeps_old_rows(db: Store) -> None:
    old_pings, new_pings = fleet_pings(rounds=2, vehicles=2)
    old_rows = [
        {k: v for k, v in vehicle_row(p).items() if k != "obd_codes"}
        | {"job_version": "0", "updated_at": 1.0}
        for p in old_pings
    ]
    create_old_vehicles(db.url, old_rows)
    engine = db.engine  # engine_for migrates the existing table
    assert "obd_codes" in {c["name"] for c in inspect(engine).get_columns("vehicles")}
    rows = vehicles_by_vin(db)
    assert set(rows) == {p.vin for p in old_pings}
    assert all(r["obd_codes"] is None and r["job_version"] == "0" for r in rows.values())
    store.upsert_vehicles(engine, [vehicle_row(new_pings[0]) | {"obd_codes": ["P0420"]}], "1")
    rows = vehicles_by_vin(db)
    assert rows[new_pings[0].vin]["obd_codes"] == ["P0420"]
    assert rows[new_pings[1].vin]["job_version"] == "0"


# --- an unreachable store -------------------------------------------------------------------
def test_a_write_waits_for_an_unreachable_postgresql_and_applies_once(pg_database: str) -> None:
    """PostgreSQL behind a proxy that is cut for two seconds (open connections broken, new
    ones refused): the upsert retries, then applies the batch exactly once."""
    with cuttable_link(pg_database) as (through, proxy):
        try:
            engine = store.engine_for(through)
            first, second = fleet_pings(rounds=2)
            store.upsert_vehicles(engine, [vehicle_row(p) for p in first], "1")
            proxy.cut()
            timer = threading.Timer(2.0, proxy.restore)
            timer.start()
            began = time.monotonic()
            store.upsert_vehicles(engine, [vehicle_row(p) for p in second], "1")
            assert time.monotonic() - began >= 1.5  # it waited for the store
            timer.join()
            rows = store.read_table(engine, store.vehicles)
            assert sorted((r["vin"], r["sequence"]) for r in rows) == sorted(
                (p.vin, p.sequence) for p in second
            )
        finally:
            store.engine_for(through).dispose()


def test_a_wrong_statement_is_not_retried(tmp_path: Path) -> None:
    engine = store.engine_for(f"sqlite:///{tmp_path / 'x.db'}")
    began = time.monotonic()
    with pytest.raises(DBAPIError):
        store.retrying("a bad statement", lambda: engine.connect().execute(text("SELEC 1")))
    assert time.monotonic() - began < 1


def test_an_unreachable_store_fails_after_its_patience(tmp_path: Path) -> None:
    missing = create_engine(f"sqlite:///{tmp_path / 'no' / 'such' / 'dir.db'}")
    with pytest.raises(OperationalError):
        store.retrying("a write", lambda: missing.connect(), patience=1.0)
