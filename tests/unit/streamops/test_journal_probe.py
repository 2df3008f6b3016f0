"""Health's probe of the transactions journal (a ``journal:`` source located by the job's
``store_url``) on a real SQLite store: the backlog, and entries dropped before they were read."""

from __future__ import annotations

from pathlib import Path

from streamops.world.source_probes import Prober
from streamops_contract.sinks import journal_store as js
from streamops_contract.sinks.journal_store import Change

SOURCE = "journal:transactions"


def test_the_backlog_and_a_loss_of_the_journal(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'transactions.db'}"
    engine = js.engine_for(url)
    changes = [Change("insert", f"tx-{n}", 1.0, "new") for n in range(1, 21)]
    js.apply_changes(engine, changes, capacity=10)  # 11..20 held
    stream = js.head(engine).stream
    args = {"store_url": url}
    ok = Prober(1.0).probe(SOURCE, {"source": SOURCE, "sequence": 14, "stream": stream}, args)
    assert ok is not None and (ok.kind, ok.unit, ok.backlog, ok.broken) == (
        "journal", "entries", 6, None)  # fmt: skip
    lost = Prober(1.0).probe(SOURCE, {"source": SOURCE, "sequence": 4, "stream": stream}, args)
    assert lost is not None and lost.broken is not None
    assert "committed sequence 4" in lost.broken and "oldest entry held is 11" in lost.broken
    assert "entries 5..10 were dropped unread" in lost.broken
    other = Prober(1.0).probe(SOURCE, {"source": SOURCE, "sequence": 14, "stream": "x"}, args)
    assert other is not None and "now holds journal" in (other.broken or "")
    unknown = Prober(1.0).probe(SOURCE, {"source": SOURCE, "sequence": 1}, {})
    assert unknown is not None and "no store_url" in (unknown.unknown or "")
