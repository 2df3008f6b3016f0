"""The tutorial's transactions journal on the real local cluster: v1, a savepoint with cancel,
v2 from it, and the oracle over ``transaction_log``.

The producer puts transactions into a SQLite store with an event journal (and every entry it
wrote into a record file) → transactions v1 logs each entry → a savepoint with cancel stops
it at a batch boundary → more entries are written while nothing runs → v2 is started from the
savepoint (its ``transaction-log`` stage restored by name) → after the producer stops and the
job caught up, ``transaction_log`` holds every entry of the record file exactly once, as
written: those up to the savepoint's sequence logged by v1, the later ones by v2.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from support.integration import ClusterHandle, describe_job, wait_until
from support.journal_oracle import check_logged_once, wait_logged

from spark_jobs import transactions
from streamops.exceptions import JobAlreadyRunning
from streamops.procedures.savepoint_taking import savepoint_job
from streamops.sim.transactions import TransactionSimulator
from streamops.spec import JobSpec, load_spec
from streamops.state.savepoints import catalogue
from streamops.world.restore import earliest_positions, start_from_savepoint
from streamops.world.submit import submit_job
from streamops_contract.sinks import journal_store

pytestmark = pytest.mark.integration
JOB = "transactions-it"
CONFIG = Path(__file__).resolve().parents[2] / "config" / "jobs"


def spec(file: str, store_url: str) -> JobSpec:
    base = load_spec(CONFIG / file)
    return base.model_copy(update={"name": JOB, "args": {**base.args, "store_url": store_url}})


def test_v1_savepoint_with_cancel_then_v2_logs_each_entry_once(
    spark_cluster: ClusterHandle, tmp_path: Path
) -> None:
    settings, registry = spark_cluster.settings, spark_cluster.registry
    store_url = f"sqlite:///{tmp_path / 'transactions.db'}"
    record_file = tmp_path / "entries.jsonl"
    engine = journal_store.engine_for(store_url, journal_store.LOG_TABLES)
    producer = TransactionSimulator(store_url, rate=40, seed=7, journal=record_file)
    producer.start()
    started = time.monotonic()
    try:
        submit_job(spec("transactions.yaml", store_url), settings, wait_healthy=300)
        wait_until(lambda: len(journal_store.read_log(engine)) >= 20, 60, "v1 to log entries")
        result = savepoint_job(settings, JOB, "tx-it-v1", cancel=True)
        assert result.ok, result
        manifest = catalogue.get_savepoint(settings.layout, "tx-it-v1")
        assert set(manifest.stages) == {transactions.STAGE}
        position = int(earliest_positions(manifest)[transactions.SOURCE_ID]["sequence"])
        logged_by_v1 = journal_store.read_log(engine)
        assert logged_by_v1 and max(int(r["sequence"]) for r in logged_by_v1) == position
        written_at_savepoint = producer.emitted
        wait_until(lambda: producer.emitted > written_at_savepoint + 40, 30, "entries meanwhile")

        start_from_savepoint(spec("transactions-v2.yaml", store_url), settings, "tx-it-v1",
                             [transactions.STAGE], wait_healthy=300)  # fmt: skip
        assert registry.view(JOB).version == "2"
        _restore_is_refused_while_v2_runs(settings, spec("transactions-v2.yaml", store_url))
        producer.stop()
        last = producer.last_sequence
        assert last > position
        wait_logged(engine, last, describe=lambda: describe_job(registry.view(JOB)))
        logged = check_logged_once(engine, record_file, last,
                                   lambda n: "1" if n <= position else "2")
        by_v2 = sum(1 for r in logged if r["job_version"] == "2")
        print(f"transactions: {last} entries, {position} logged by v1, {by_v2} by v2, "
              f"{time.monotonic() - started:.1f}s")  # fmt: skip
    finally:
        producer.stop()
        spark_cluster.let_go(JOB)


def _restore_is_refused_while_v2_runs(settings: Any, v2: JobSpec) -> None:
    """Issue 44.4 on the real cluster: the checkpoint v2 runs on holds copies of the savepoint's
    files, not links, and a restore while v2 runs is refused without touching it."""
    checkpoint = settings.layout.checkpoint(JOB, transactions.STAGE)
    saved = settings.layout.savepoint("tx-it-v1") / "stages" / transactions.STAGE
    assert (saved / "metadata").stat().st_mode & 0o777 == 0o444
    assert (checkpoint / "metadata").read_bytes() == (saved / "metadata").read_bytes()
    assert (checkpoint / "metadata").stat().st_ino != (saved / "metadata").stat().st_ino
    before = checkpoint.stat().st_ino
    with pytest.raises(JobAlreadyRunning, match="streamops upgrade"):
        start_from_savepoint(v2, settings, "tx-it-v1", [transactions.STAGE], wait_healthy=None)
    assert checkpoint.stat().st_ino == before  # not swapped
    assert not [p for p in checkpoint.parent.iterdir() if ".restoring-" in p.name]
