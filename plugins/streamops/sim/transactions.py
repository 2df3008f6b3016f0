"""The transactions producer: inserts and updates of a ``transactions`` table with an event
journal, as the operator tutorial's ``transaction`` map.

Each tick puts the due changes (:class:`TransactionChanges`: a new transaction, or a new
amount and status of one already there, deterministic from the seed) into the store in one
database transaction, journaled with their sequence numbers, the journal trimmed to its
newest ``capacity`` entries (:mod:`streamops_contract.sinks.journal_store`). The journal
being bounded, the producer can also append every entry it wrote to a record file
(``--journal``): the tests' oracle, which holds everything ever written (:func:`read_records`).

Run it with ``streamops sim transactions`` (``streamops sim start transactions`` in the
background) or ``python -m streamops.sim.transactions``. A producer started again on the same
store goes on: the journal's sequence continues and new transactions are numbered after those
there.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import random
import threading
from collections.abc import Sequence
from pathlib import Path

from sqlalchemy import Engine, func, make_url, select

from streamops.exceptions import SimulatorError
from streamops.settings import Settings
from streamops.sim.flags import add_transactions_arguments
from streamops.sim.fleet import Pacer
from streamops.sim.runner import run_foreground, standalone_main
from streamops_contract.sinks import journal_store
from streamops_contract.sinks.journal_store import Change, Entry

log = logging.getLogger(__name__)

STATUSES = ("pending", "paid", "refunded")
INSERT_SHARE = 0.6
"""The share of changes that add a transaction (the others update one)."""


class TransactionChanges:
    """Changes of ``transactions``, deterministic from ``seed`` and the transactions already
    there (``existing``): ids ``tx-0000001``, ``tx-0000002``, … in insertion order."""

    def __init__(self, seed: int, existing: int = 0) -> None:
        self._random = random.Random(seed)
        self.count = existing

    def take(self, n: int) -> list[Change]:
        out = []
        for _ in range(n):
            rnd = self._random
            if self.count == 0 or rnd.random() < INSERT_SHARE:
                self.count += 1
                out.append(Change("insert", tx_id(self.count),
                                  round(rnd.uniform(1, 1000), 2), "new"))  # fmt: skip
            else:
                which = rnd.randint(1, self.count)
                out.append(Change("update", tx_id(which), round(rnd.uniform(1, 1000), 2),
                                  rnd.choice(STATUSES)))  # fmt: skip
        return out


def tx_id(n: int) -> str:
    return f"tx-{n:07d}"


class RecordFile:
    """Appends the entries written to ``path``, one JSON line each (one ``write()`` per tick on
    an ``O_APPEND`` descriptor)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def append(self, entries: Sequence[Entry]) -> None:
        data = "".join(json.dumps(e.to_dict(), separators=(",", ":")) + "\n" for e in entries)
        os.write(self._fd, data.encode("utf-8"))

    def close(self) -> None:
        os.close(self._fd)


def read_records(path: str | os.PathLike[str]) -> list[Entry]:
    """Every entry of a record file, in order; a truncated last line is skipped."""
    lines = Path(path).read_text(encoding="utf-8").split("\n")
    return [Entry(**json.loads(line)) for line in lines[:-1] if line]


class TransactionSimulator:
    """Puts ``rate`` changes a second into the store at ``store_url`` until stopped or
    ``max_entries``; ``emitted`` counts the entries written."""

    source = "transactions"

    def __init__(
        self, store_url: str, *, rate: float = 10.0, max_entries: int | None = None,
        capacity: int = journal_store.DEFAULT_CAPACITY, seed: int = 1,
        journal: str | os.PathLike[str] | None = None, tick: float = 0.05,
    ) -> None:  # fmt: skip
        if rate <= 0:
            raise SimulatorError(f"--rate must be positive, not {rate}")
        if capacity < 1:
            raise SimulatorError(f"--capacity must be at least 1, not {capacity}")
        self.store_url = store_url
        self.rate = rate
        self.max_entries = max_entries
        self.capacity = capacity
        self.seed = seed
        self.journal_path = None if journal is None else Path(journal)
        self.tick = tick
        self.emitted = 0
        self.last_sequence = 0
        self._stop = threading.Event()
        self._done = threading.Event()
        self._error: BaseException | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        url = make_url(self.store_url)
        if url.get_backend_name() == "sqlite" and url.database:  # its directory, first
            Path(url.database).parent.mkdir(parents=True, exist_ok=True)
        engine = journal_store.engine_for(self.store_url)
        with engine.connect() as conn:
            existing = int(
                conn.execute(select(func.count()).select_from(journal_store.transactions)).scalar()
                or 0
            )
        self._changes = TransactionChanges(self.seed, existing)
        records = RecordFile(self.journal_path) if self.journal_path else None
        log.info("fleetsim-transactions: writing %.0f changes/s into %s (journal capacity %d, "
                 "%d transactions there)", self.rate, self.store_url, self.capacity,
                 existing)  # fmt: skip
        self._thread = threading.Thread(
            target=self._run, args=(engine, records), name="transactions", daemon=True
        )
        self._thread.start()

    def _run(self, engine: Engine, records: RecordFile | None) -> None:
        pacer = Pacer(self.rate, self.max_entries)
        try:
            while not self._stop.is_set():
                due = pacer.due()
                if due:
                    entries = journal_store.apply_changes(
                        engine, self._changes.take(due), capacity=self.capacity
                    )
                    if records is not None:
                        records.append(entries)
                    self.emitted += len(entries)
                    self.last_sequence = entries[-1].sequence
                if pacer.exhausted:
                    break
                self._stop.wait(self.tick)
        except BaseException as exc:  # reported by wait_done
            self._error = exc
            log.exception("fleetsim-transactions failed")
        finally:
            if records is not None:
                records.close()
            self._done.set()

    def wait_done(self, timeout: float | None = None) -> bool:
        done = self._done.wait(timeout)
        if self._error is not None:
            raise SimulatorError(f"fleetsim-transactions failed: {self._error}") from self._error
        return done

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(30)


def run_from_args(args: argparse.Namespace, settings: Settings) -> int:
    """Handler of ``sim transactions``."""
    url = args.store_url or f"sqlite:///{Path(settings.state_root).resolve()}/transactions.db"
    sim = TransactionSimulator(
        url, rate=args.rate, max_entries=args.max_entries, capacity=args.capacity,
        seed=args.seed, journal=args.journal,
    )  # fmt: skip
    return run_foreground(sim, progress_every=args.progress_every)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m streamops.sim.transactions [flags]``, as ``streamops sim transactions``."""
    return standalone_main(
        "transactions", "put transactions into a table with an event journal",
        add_transactions_arguments, run_from_args, argv,
    )  # fmt: skip


if __name__ == "__main__":
    raise SystemExit(main())


__all__ = ["RecordFile", "TransactionChanges", "TransactionSimulator", "read_records", "tx_id"]
