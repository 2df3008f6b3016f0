"""The transactions store and its event journal on real SQLite and PostgreSQL: sequences,
the trimming to the journal's capacity, the head, and the idempotent ``transaction_log``.

PostgreSQL runs in a schema of its own per test inside the session's throwaway database
(``postgres_url``, on the session's embedded PostgreSQL or ``STREAMOPS_TEST_PG_URL``)."""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError

from streamops_contract.sinks import journal_store as js
from streamops_contract.sinks import store
from streamops_contract.sinks.journal_store import Change


@pytest.fixture(params=["sqlite", "postgresql"])
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Engine]:
    """An empty store: a new SQLite file, or a new schema in the session's PG database."""
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'transactions.db'}"
    else:
        database: str = request.getfixturevalue("postgres_url")
        schema = f"j_{uuid.uuid4().hex[:10]}"
        plain = create_engine(database)
        with plain.begin() as conn:
            conn.execute(text(f"CREATE SCHEMA {schema}"))
        plain.dispose()
        url = f"{database}?options=-csearch_path%3D{schema}"
    made = js.engine_for(url, (*js.JOURNAL_TABLES, *js.LOG_TABLES))
    try:
        yield made
    finally:
        made.dispose()
        store._engines.pop(url, None)


def inserts(first: int, count: int) -> list[Change]:
    return [Change("insert", f"tx-{n}", float(n), "new") for n in range(first, first + count)]


def test_an_empty_journal_has_no_head(engine: Engine) -> None:
    assert js.head(engine) == js.JournalHead(None, 0, js.DEFAULT_CAPACITY, None)
    assert js.read_entries(engine, 0, 100) == []


def test_changes_are_numbered_in_order_and_journaled_with_the_row_after_them(
    engine: Engine,
) -> None:
    first = js.apply_changes(engine, inserts(1, 3), at=100.0)
    second = js.apply_changes(engine, [Change("update", "tx-2", 7.5, "paid")], at=101.0)
    assert [e.sequence for e in first + second] == [1, 2, 3, 4]
    assert second[0].op == "update" and json.loads(second[0].payload) == {
        "id": "tx-2", "amount": 7.5, "status": "paid"}  # fmt: skip
    assert js.read_entries(engine, 0, 4) == first + second
    assert js.read_entries(engine, 1, 3) == first[1:]
    rows = {r["id"]: r for r in store.read_table(engine, js.transactions)}
    assert (rows["tx-2"]["amount"], rows["tx-2"]["status"]) == (7.5, "paid")
    held = js.head(engine)
    assert (held.first, held.last, held.capacity) == (1, 4, js.DEFAULT_CAPACITY)
    assert held.stream and len(held.stream) == 32


def test_the_journal_keeps_its_newest_capacity_entries(engine: Engine) -> None:
    for n in range(1, 26, 5):  # 25 entries in batches of 5, capacity 7
        js.apply_changes(engine, inserts(n, 5), capacity=7)
    held = js.head(engine)
    assert (held.first, held.last, held.capacity) == (19, 25, 7)
    assert [e.sequence for e in js.read_entries(engine, 0, 100)] == list(range(19, 26))
    # the table keeps every transaction; only the journal is bounded
    assert len(store.read_table(engine, js.transactions)) == 25
    # a batch larger than the capacity leaves only its newest entries
    js.apply_changes(engine, inserts(26, 10), capacity=3)
    assert [e.sequence for e in js.read_entries(engine, 0, 100)] == [33, 34, 35]


def test_a_failed_change_writes_nothing(engine: Engine) -> None:
    js.apply_changes(engine, inserts(1, 2))
    with pytest.raises(IntegrityError):
        js.apply_changes(engine, [*inserts(3, 1), *inserts(1, 1)])  # tx-1 exists
    with pytest.raises(ValueError, match="no transaction tx-9"):
        js.apply_changes(engine, [Change("update", "tx-9", 1.0, "paid")])
    assert js.head(engine).last == 2
    assert [e.sequence for e in js.read_entries(engine, 0, 10)] == [1, 2]
    assert js.apply_changes(engine, inserts(3, 1))[0].sequence == 3


def test_concurrent_writers_get_distinct_gap_free_sequences(engine: Engine) -> None:
    errors: list[BaseException] = []

    def writer(k: int) -> None:
        try:
            for n in range(10):
                js.apply_changes(engine, inserts(1000 * k + n * 2, 2))
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(k,)) for k in (1, 2, 3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert [e.sequence for e in js.read_entries(engine, 0, 1000)] == list(range(1, 61))


def test_the_log_is_keyed_by_sequence_a_replay_writes_nothing(engine: Engine) -> None:
    entries = js.apply_changes(engine, inserts(1, 3))
    rows = [e.to_dict() for e in entries]
    assert js.log_entries(engine, rows[:2], "1") == 2
    assert js.log_entries(engine, rows, "2") == 3  # a replay of the first two, and one more
    logged = js.read_log(engine)
    assert [(r["sequence"], r["job_version"]) for r in logged] == [(1, "1"), (2, "1"), (3, "2")]
    assert [r["amount"] for r in logged] == [1.0, 2.0, 3.0]
    assert js.log_entries(engine, [], "1") == 0


def test_the_capacity_must_be_positive(engine: Engine) -> None:
    with pytest.raises(ValueError, match="at least 1"):
        js.apply_changes(engine, inserts(1, 1), capacity=0)
