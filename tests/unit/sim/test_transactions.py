"""The transactions producer on a real SQLite store: what it writes and journals, its record
file, a restart on the same store, and ``streamops sim start|status|stop transactions``."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from streamops.cli import main
from streamops.exceptions import SimulatorError
from streamops.processes import pid_alive
from streamops.settings import Settings
from streamops.sim import background
from streamops.sim.transactions import TransactionChanges, TransactionSimulator, read_records
from streamops_contract.sinks import journal_store as js
from streamops_contract.sinks import store


def run(url: str, journal: Path, count: int, capacity: int = js.DEFAULT_CAPACITY) -> None:
    sim = TransactionSimulator(url, rate=2000, max_entries=count, capacity=capacity, seed=3,
                               journal=journal)  # fmt: skip
    sim.start()
    try:
        assert sim.wait_done(30)
    finally:
        sim.stop()
    assert sim.emitted == count


def test_the_producer_writes_journals_and_records_every_change(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'deep' / 'transactions.db'}"  # its directory is made
    records = tmp_path / "entries.jsonl"
    run(url, records, 300, capacity=100)
    engine = js.engine_for(url)
    written = read_records(records)
    assert [e.sequence for e in written] == list(range(1, 301))
    held = js.head(engine)
    assert (held.first, held.last, held.capacity) == (201, 300, 100)
    assert js.read_entries(engine, 0, 300) == written[200:]  # the journal: its newest 100
    # the table holds each transaction's last change
    last = {e.id: json.loads(e.payload) for e in written}
    rows = {r["id"]: r for r in store.read_table(engine, js.transactions)}
    assert {k: (v["amount"], v["status"]) for k, v in last.items()} == {
        k: (r["amount"], r["status"]) for k, r in rows.items()
    }
    assert {e.op for e in written} == {"insert", "update"}

    run(url, records, 50, capacity=100)  # started again: goes on, new ids after the old
    again = read_records(records)
    assert [e.sequence for e in again] == list(range(1, 351))
    assert js.head(engine).stream == held.stream
    assert len(store.read_table(engine, js.transactions)) == len({e.id for e in again})


def test_changes_are_deterministic_from_the_seed() -> None:
    assert TransactionChanges(5).take(50) == TransactionChanges(5).take(50)
    first = TransactionChanges(5).take(1)[0]
    assert (first.op, first.id) == ("insert", "tx-0000001")
    assert all(c.id <= "tx-0000010" or c.op == "insert" for c in TransactionChanges(5, 10).take(5))


def test_bad_parameters_are_refused(tmp_path: Path) -> None:
    with pytest.raises(SimulatorError, match="--rate"):
        TransactionSimulator("sqlite://", rate=0)
    with pytest.raises(SimulatorError, match="--capacity"):
        TransactionSimulator("sqlite://", capacity=0)


@pytest.fixture
def state_root(tmp_path: Path) -> Iterator[Path]:
    root = tmp_path / "state"
    yield root
    background.stop(Settings.from_env({}, state_root=str(root)), ["transactions"])


def test_sim_start_status_stop_transactions(
    state_root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--state-root", str(state_root), "sim"]
    assert main([*argv, "start", "transactions", "--rate", "50", "--progress-every", "0.5"]) == 0
    assert "fleetsim-transactions started (pid" in capsys.readouterr().out
    deadline = time.monotonic() + 30
    while True:
        assert main([*argv, "status", "--json"]) == 0
        found = next(r for r in json.loads(capsys.readouterr().out) if r["sim"] == "transactions")
        if (found["emitted"] or 0) > 0 or time.monotonic() > deadline:
            break
        time.sleep(0.3)
    assert found["running"] and found["emitted"] > 0
    assert main([*argv, "stop", "transactions"]) == 0
    assert "stopped fleetsim-transactions" in capsys.readouterr().out
    assert not pid_alive(found["pid"])
    engine = js.engine_for(f"sqlite:///{state_root.resolve()}/transactions.db")
    assert js.head(engine).last >= found["emitted"]  # the state root's store, by default
