"""The ``transactions`` table and its event journal, and the ``transaction_log`` of the jobs.

The operator tutorial's ``transaction`` map with an event journal, in a SQL store (SQLite by
default, PostgreSQL by URL, through SQLAlchemy Core like :mod:`streamops_contract.sinks.store`):

- ``transactions (id, amount, status, updated_at)``: the current value of each transaction;
- ``transactions_journal (sequence, at, op, id, payload)``: every change of ``transactions``,
  numbered, written in the same database transaction as the change, and trimmed to the newest
  ``capacity`` entries (9000 by default, as the tutorial's journal): a bounded log, so a reader
  that falls behind by more than ``capacity`` entries finds the ones it had not read gone;
- ``transactions_journal_head (id = 1, last_sequence, capacity, stream)``: the journal's last
  sequence (it only grows, whatever was trimmed), its capacity, and its identity, a random id
  made with the journal (a store created again is another stream, not the same one restarted).

The head row is updated first in every change's transaction, so writers are serialized by it
(a row lock in PostgreSQL, the write lock in SQLite) and sequences are gap-free.

``transaction_log (sequence, id, op, amount, payload, job_version, logged_at)``: what the
transactions jobs log, one row per journal entry, keyed by its sequence: a replayed batch
inserts nothing twice (``ON CONFLICT DO NOTHING``), and the row keeps the version of the job
that logged it first.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import (
    BigInteger,
    Column,
    Engine,
    Float,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    func,
    select,
    update,
)
from sqlalchemy.engine import Connection

from streamops_contract.sinks import store

DEFAULT_CAPACITY = 9000
"""Entries the journal holds, as the tutorial's ``event-journal`` capacity."""

metadata = MetaData()

transactions = Table(
    "transactions",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("amount", Float, nullable=False),
    Column("status", String(16), nullable=False),
    Column("updated_at", Float, nullable=False),
)

transactions_journal = Table(
    "transactions_journal",
    metadata,
    Column("sequence", BigInteger, primary_key=True, autoincrement=False),
    Column("at", Float, nullable=False),
    Column("op", String(8), nullable=False),
    Column("id", String(64), nullable=False),
    Column("payload", Text, nullable=False),
)

journal_head = Table(
    "transactions_journal_head",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=False),
    Column("last_sequence", BigInteger, nullable=False),
    Column("capacity", Integer, nullable=False),
    Column("stream", String(64), nullable=False),
)

transaction_log = Table(
    "transaction_log",
    metadata,
    Column("sequence", BigInteger, primary_key=True, autoincrement=False),
    Column("id", String(64), nullable=False),
    Column("op", String(8), nullable=False),
    Column("amount", Float, nullable=True),
    Column("payload", Text, nullable=False),
    Column("job_version", String(64), nullable=False),
    Column("logged_at", Float, nullable=False),
)

JOURNAL_TABLES = (transactions, transactions_journal, journal_head)
"""What the producer writes."""
LOG_TABLES = (transaction_log,)
"""What the transactions jobs write."""


@dataclass(frozen=True, slots=True)
class Change:
    """One change of ``transactions``: ``op`` is ``insert`` or ``update``."""

    op: str
    id: str
    amount: float
    status: str


@dataclass(frozen=True, slots=True)
class Entry:
    """One journal entry: the change numbered ``sequence``, ``payload`` the row after it."""

    sequence: int
    at: float
    op: str
    id: str
    payload: str

    def to_dict(self) -> dict[str, Any]:
        return {"sequence": self.sequence, "at": self.at, "op": self.op, "id": self.id,
                "payload": self.payload}  # fmt: skip


@dataclass(frozen=True, slots=True)
class JournalHead:
    """What the journal holds: entries ``first..last`` (``first`` None when it holds none),
    its capacity and its stream identity."""

    first: int | None
    last: int
    capacity: int
    stream: str | None


def engine_for(url: str, tables: Iterable[Table] = JOURNAL_TABLES) -> Engine:
    """The store's engine (one per URL per process), with ``tables`` created if missing."""
    return store.engine_for(url, tables)


def _head_row(conn: Connection, capacity: int) -> tuple[int, str]:
    """Lock the head row (created by the first change: a writer that meets another creating
    it waits for that one and keeps its row) and return its last sequence and stream; the
    capacity given by the writer is kept in it."""
    first = {"id": 1, "last_sequence": 0, "capacity": capacity, "stream": uuid.uuid4().hex}
    conn.execute(store._insert(conn.engine, journal_head).values(**first).on_conflict_do_nothing())
    found = conn.execute(
        update(journal_head)
        .where(journal_head.c.id == 1)
        .values(capacity=capacity)
        .returning(journal_head.c.last_sequence, journal_head.c.stream)
    ).one()
    return int(found[0]), str(found[1])


def apply_changes(
    engine: Engine, changes: Sequence[Change], *, capacity: int = DEFAULT_CAPACITY,
    at: float | None = None,
) -> list[Entry]:  # fmt: skip
    """Apply ``changes`` to ``transactions`` and journal them, in one database transaction;
    the journal is then trimmed to its newest ``capacity`` entries. The entries written."""
    if capacity < 1:
        raise ValueError(f"the journal's capacity must be at least 1, not {capacity}")
    if not changes:
        return []
    now = time.time() if at is None else at
    store.ensure_tables(engine, JOURNAL_TABLES)

    def attempt() -> list[Entry]:
        with engine.begin() as conn:
            last, _ = _head_row(conn, capacity)
            entries: list[Entry] = []
            for offset, change in enumerate(changes, start=1):
                row = {"id": change.id, "amount": change.amount, "status": change.status,
                       "updated_at": now}  # fmt: skip
                if change.op == "insert":
                    conn.execute(transactions.insert().values(**row))
                elif change.op == "update":
                    done = conn.execute(
                        update(transactions).where(transactions.c.id == change.id).values(**row)
                    )
                    if done.rowcount != 1:
                        raise ValueError(f"no transaction {change.id} to update")
                else:
                    raise ValueError(f"unknown change {change.op!r} (insert or update)")
                payload = json.dumps({k: row[k] for k in ("id", "amount", "status")},
                                     separators=(",", ":"))  # fmt: skip
                entries.append(Entry(last + offset, now, change.op, change.id, payload))
            conn.execute(transactions_journal.insert(), [e.to_dict() for e in entries])
            newest = last + len(entries)
            conn.execute(
                update(journal_head).where(journal_head.c.id == 1).values(last_sequence=newest)
            )
            conn.execute(
                transactions_journal.delete().where(
                    transactions_journal.c.sequence <= newest - capacity
                )
            )
            return entries

    return store.retrying("the transactions change", attempt)


def head(engine: Engine) -> JournalHead:
    """The journal's first and last sequence, capacity and stream (an empty journal, never
    written: ``first`` None, ``last`` 0, no stream)."""
    store.ensure_tables(engine, JOURNAL_TABLES)
    with engine.connect() as conn:
        row = conn.execute(
            select(journal_head.c.last_sequence, journal_head.c.capacity, journal_head.c.stream)
        ).first()
        first = conn.execute(select(func.min(transactions_journal.c.sequence))).scalar()
    if row is None:
        return JournalHead(None, 0, DEFAULT_CAPACITY, None)
    return JournalHead(None if first is None else int(first), int(row[0]), int(row[1]),
                       str(row[2]))  # fmt: skip


def read_entries(engine: Engine, after: int, until: int) -> list[Entry]:
    """The entries with ``after < sequence <= until``, in order (those the journal holds)."""
    store.ensure_tables(engine, JOURNAL_TABLES)
    c = transactions_journal.c
    stmt = (
        select(c.sequence, c.at, c.op, c.id, c.payload)
        .where(c.sequence > after, c.sequence <= until)
        .order_by(c.sequence)
    )
    with engine.connect() as conn:
        return [Entry(int(r[0]), float(r[1]), str(r[2]), str(r[3]), str(r[4]))
                for r in conn.execute(stmt)]  # fmt: skip


def log_entries(engine: Engine, rows: Iterable[Mapping[str, Any]], job_version: str) -> int:
    """Insert each journal entry into ``transaction_log`` once, keyed by its sequence (a
    replayed batch inserts nothing); the rows offered."""
    now = time.time()
    batch = [{"sequence": int(r["sequence"]), "id": r["id"], "op": r["op"],
              "amount": _amount(str(r["payload"])), "payload": r["payload"],
              "job_version": job_version, "logged_at": now} for r in rows]  # fmt: skip
    if not batch:
        return 0
    stmt = store._insert(engine, transaction_log).on_conflict_do_nothing(
        index_elements=[transaction_log.c.sequence]
    )
    store._write(engine, "the transaction_log insert", stmt, batch)
    return len(batch)


def _amount(payload: str) -> float | None:
    try:
        value = json.loads(payload).get("amount")
    except (ValueError, AttributeError):
        return None
    return float(value) if isinstance(value, int | float) else None


def read_log(engine: Engine) -> list[dict[str, Any]]:
    """Every row of ``transaction_log``, by sequence (none if no job created it)."""
    return sorted(store.read_table(engine, transaction_log), key=lambda r: int(r["sequence"]))


__all__ = [
    "DEFAULT_CAPACITY",
    "JOURNAL_TABLES",
    "LOG_TABLES",
    "Change",
    "Entry",
    "JournalHead",
    "apply_changes",
    "engine_for",
    "head",
    "journal_head",
    "log_entries",
    "read_entries",
    "read_log",
    "transaction_log",
    "transactions",
    "transactions_journal",
]
