"""The transactions journal's oracle: every entry the producer wrote is logged exactly once,
in order, unchanged, by the job version that ran when it was read."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from support.integration import wait_until
from support.oracle import Comparison

from streamops.sim.transactions import read_records
from streamops_contract.sinks import journal_store


def wait_logged(engine: Any, last: int, describe: Callable[[], str],
                timeout: float = 120) -> None:  # fmt: skip
    """Wait until the job has logged up to entry ``last``."""
    wait_until(
        lambda: max((int(r["sequence"]) for r in journal_store.read_log(engine)), default=0)
        >= last, timeout, f"the job to log up to entry {last}", describe=describe,
    )  # fmt: skip


def compare_logged(engine: Any, record_file: Path, last: int,
                   version_of: Callable[[int], str]) -> Comparison:  # fmt: skip
    """``transaction_log`` against entries 1..``last`` of the record file: each entry logged
    once, as written, by ``version_of(sequence)``. Missing: entries not logged; unexpected:
    rows of no entry written up to ``last``; different: rows not as written, by another
    version, or an entry logged more than once."""
    written = {e.sequence: e for e in read_records(record_file) if e.sequence <= last}
    if sorted(written) != list(range(1, last + 1)):
        raise AssertionError(f"the record file does not hold entries 1..{last} "
                             f"({len(written)} held)")  # fmt: skip
    logged = journal_store.read_log(engine)
    times = Counter(int(r["sequence"]) for r in logged)
    cmp = Comparison("transaction_log", last, len(logged))
    cmp.missing = [n for n in written if n not in times]
    cmp.unexpected = sorted(n for n in times if n not in written)
    for row in logged:
        entry = written.get(int(row["sequence"]))
        if entry is None:
            continue
        as_written = (row["id"], row["op"], row["payload"]) == (entry.id, entry.op,
                                                                 entry.payload)  # fmt: skip
        if not as_written or row["job_version"] != version_of(entry.sequence):
            cmp.different.append((entry.sequence, entry, dict(row)))
    cmp.different += [(n, f"logged {k} times", None) for n, k in sorted(times.items()) if k > 1]
    return cmp


def check_logged_once(engine: Any, record_file: Path, last: int,
                      version_of: Callable[[int], str]) -> list[dict[str, Any]]:  # fmt: skip
    """Entries 1..``last`` each logged once, as written, by ``version_of(sequence)``; the rows."""
    cmp = compare_logged(engine, record_file, last, version_of)
    assert cmp.ok, cmp.summary()
    return list(journal_store.read_log(engine))
