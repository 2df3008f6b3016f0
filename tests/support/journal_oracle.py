"""The transactions journal's oracle: every entry the producer wrote is logged exactly once,
in order, unchanged, by the job version that ran when it was read."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from support.integration import wait_until

from streamops.sim.transactions import read_records
from streamops_contract.sinks import journal_store


def wait_logged(engine: Any, last: int, describe: Callable[[], str]) -> None:
    """Wait until the job has logged up to entry ``last``."""
    wait_until(
        lambda: max((int(r["sequence"]) for r in journal_store.read_log(engine)), default=0)
        >= last, 120, f"the job to log up to entry {last}", describe=describe,
    )  # fmt: skip


def check_logged_once(engine: Any, record_file: Path, last: int,
                      version_of: Callable[[int], str]) -> list[dict[str, Any]]:  # fmt: skip
    """Entries 1..``last`` each logged once, as written, by ``version_of(sequence)``; the rows."""
    written = read_records(record_file)
    logged = journal_store.read_log(engine)
    assert [e.sequence for e in written] == list(range(1, last + 1))
    assert [int(r["sequence"]) for r in logged] == [e.sequence for e in written]
    for entry, row in zip(written, logged, strict=True):
        assert (row["id"], row["op"], row["payload"]) == (entry.id, entry.op, entry.payload)
        assert row["job_version"] == version_of(entry.sequence), row
    return list(logged)
