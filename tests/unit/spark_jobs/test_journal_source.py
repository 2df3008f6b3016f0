"""The journal source: its reader called directly on a real SQLite store, and one streaming
query on a local SparkSession through the transactions job's own stage and sink.

It reads exactly the range it is asked for, fails naming the committed sequence and the
oldest entry held when the journal dropped entries it had not read (at a trigger, and in a
partition planned before they were dropped), and with ``restart_from_earliest`` reads on from
the oldest entry held, recording the loss with its count."""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows
from support.source_rows import read_rows

from spark_jobs import transactions
from spark_jobs.runtime.context import JobContext
from spark_jobs.runtime.describe import describe_job_stages
from spark_jobs.sources.journal import (
    JournalDataSource,
    JournalRange,
    JournalSourceError,
    JournalStreamReader,
)
from spark_jobs.sources.source_state import SourceResetError, merge_states
from streamops.planner import StageAction, UpgradePlan
from streamops.spec import load_spec
from streamops.state.layout import StateLayout
from streamops_contract.sinks import journal_store as js
from streamops_contract.sinks import store
from streamops_contract.sinks.journal_store import Change

SID = "tx-test"
CONFIG = Path(__file__).resolve().parents[3] / "config" / "jobs"


@pytest.fixture
def url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'transactions.db'}"


def write(url: str, count: int, capacity: int = js.DEFAULT_CAPACITY) -> list[js.Entry]:
    engine = js.engine_for(url)
    first = js.head(engine).last + 1
    changes = [Change("insert", f"tx-{n}", float(n), "new") for n in range(first, first + count)]
    return js.apply_changes(engine, changes, capacity=capacity)


def reader(url: str, **options: str) -> JournalStreamReader:
    return JournalStreamReader({"url": url, "source_id": SID, **options})


def offset(sequence: int, stream: str | None, **extra: Any) -> dict[str, Any]:
    return {"source": SID, "sequence": sequence, "stream": stream, **extra}


def rows_of(r: JournalStreamReader, start: dict, end: dict) -> list[tuple[Any, ...]]:
    return [row for p in r.partitions(start, end) for row in read_rows(r, p)]


def test_needs_a_url() -> None:
    with pytest.raises(JournalSourceError, match="needs the option 'url'"):
        JournalStreamReader({})


def test_reads_exactly_the_range_asked_for(url: str) -> None:
    written = write(url, 25)
    stream = js.head(js.engine_for(url)).stream
    r = reader(url, partition_size="10", max_records_per_batch="12")
    start = r.initialOffset()
    assert start == offset(0, stream)  # before the oldest entry held
    end = r.latestOffset(start, r.getDefaultReadLimit())
    assert end == offset(12, stream)
    assert [(p.since, p.until) for p in r.partitions(start, end)] == [(0, 10), (10, 12)]
    assert r.latestOffset(end, ReadAllAvailable()) == offset(25, stream)
    got = rows_of(r, offset(7, stream), offset(19, stream))
    assert got == [(e.sequence, e.at, e.op, e.id, e.payload) for e in written[7:19]]
    assert rows_of(r, end, end) == []
    assert r.latestOffset(offset(25, stream), ReadMaxRows(5)) == offset(25, stream)  # idle


def test_starts_where_told(url: str) -> None:
    write(url, 10)
    stream = js.head(js.engine_for(url)).stream
    assert reader(url, start_sequence="4").initialOffset() == offset(4, stream)
    recorded = json.dumps(offset(6, stream))
    assert reader(url, start_offset=recorded).initialOffset() == offset(6, stream)
    assert reader(url, rehearsal="true").initialOffset() == offset(0, stream)


def test_pauses_while_the_pause_file_exists(url: str, tmp_path: Path) -> None:
    write(url, 5)
    pause = tmp_path / "pause"
    pause.touch()
    r = reader(url, pause_file=str(pause))
    start = r.initialOffset()
    assert r.latestOffset(start, ReadAllAvailable()) == start
    pause.unlink()
    assert r.latestOffset(start, ReadAllAvailable())["sequence"] == 5


def test_fails_naming_the_positions_when_entries_were_dropped_unread(url: str) -> None:
    write(url, 10, capacity=10)
    stream = js.head(js.engine_for(url)).stream
    r = reader(url)
    start = r.initialOffset()
    r.latestOffset(start, ReadAllAvailable())  # fine: nothing dropped yet
    write(url, 15, capacity=10)  # entries 1..15 dropped, 16..25 held
    committed = offset(4, stream)
    with pytest.raises(SourceResetError) as failed:
        r.latestOffset(committed, ReadAllAvailable())
    message = str(failed.value)
    assert "committed offset is sequence 4" in message
    assert "oldest entry it still holds is 16" in message and "capacity 10" in message
    assert "entries 5..15 were dropped before they were read" in message
    assert "restart_from_earliest" in message


def test_a_partition_planned_before_its_entries_were_dropped_fails(url: str) -> None:
    write(url, 10, capacity=10)
    stream = js.head(js.engine_for(url)).stream
    r = reader(url)
    planned = r.partitions(offset(0, stream), offset(10, stream))
    write(url, 4, capacity=10)  # 1..4 dropped while the batch waited
    with pytest.raises(SourceResetError, match=r"entries 1\.\.4 of the batch 1\.\.10 were dropped"):
        read_rows(r, planned[0])


def test_another_journal_or_a_head_below_the_commit_fails(url: str, tmp_path: Path) -> None:
    write(url, 5)
    r = reader(url)
    with pytest.raises(SourceResetError, match="another journal"):
        r.latestOffset(offset(3, "an-older-journal"), ReadAllAvailable())
    stream = js.head(js.engine_for(url)).stream
    with pytest.raises(SourceResetError, match=r"last entry \(5\) is below"):
        r.latestOffset(offset(9, stream), ReadAllAvailable())
    with pytest.raises(SourceResetError, match="now holds journal"):
        read_rows(r, JournalRange(0, 5, "an-older-journal"))


def test_restart_from_earliest_reads_on_and_counts_the_loss(url: str, tmp_path: Path) -> None:
    write(url, 30, capacity=10)  # 21..30 held
    stream = js.head(js.engine_for(url)).stream
    state_dir = tmp_path / "sources"
    r = reader(url, on_source_reset="restart_from_earliest", state_dir=str(state_dir))
    end = r.latestOffset(offset(12, stream), ReadAllAvailable())
    assert end == offset(30, stream, **{"from": 20})
    assert [row[0] for row in rows_of(r, offset(12, stream), end)] == list(range(21, 31))
    loss = merge_states(state_dir)[SID]["losses"]
    assert len(loss) == 1
    assert (loss[0]["committed"], loss[0]["resumed_after"], loss[0]["lost_records"]) == (12, 20, 8)
    assert r.latestOffset(end, ReadAllAvailable()) == end  # read on from there


def test_a_store_that_does_not_answer_degrades(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = f"sqlite:///{tmp_path / 'no' / 'such' / 'dir.db'}"
    r = JournalStreamReader({"url": missing, "source_id": SID})
    monkeypatch.setattr(store, "RETRY_S", 0.0)  # no patience: the first failure counts
    start = offset(3, "s")
    assert r.latestOffset(start, ReadAllAvailable()) == start
    assert r.state.state == "degraded" and "did not answer" in (r.state.reason or "")


def test_the_job_stage_logs_each_entry_once(spark: SparkSession, url: str, tmp_path: Path) -> None:
    """A real streaming query: the journal source into the job's sink, twice replayed."""
    written = write(url, 40)
    spark.dataSource.register(JournalDataSource)
    frame = (
        spark.readStream.format("transactions_journal").option("url", url)
        .option("source_id", SID).option("max_records_per_batch", "15").load()
        .select(*transactions.LOG_FIELDS)
    )  # fmt: skip
    sink = transactions.log_sink(url, "1")
    query = (frame.writeStream.foreachBatch(sink)
             .option("checkpointLocation", str(tmp_path / "cp")).start())  # fmt: skip
    try:
        query.processAllAvailable()
        written += write(url, 5)
        query.processAllAvailable()
    finally:
        query.stop()
    engine = js.engine_for(url, js.LOG_TABLES)
    sink(spark.createDataFrame([e.to_dict() for e in written[:3]]).select(
        *transactions.LOG_FIELDS), 0)  # a replayed batch: nothing twice  # fmt: skip
    logged = js.read_log(engine)
    assert [(r["sequence"], r["id"], r["op"], r["payload"]) for r in logged] == [
        (e.sequence, e.id, e.op, e.payload) for e in written
    ]
    assert {r["job_version"] for r in logged} == {"1"}


def test_v1_restores_into_v2_by_the_planner(spark: SparkSession, tmp_path: Path) -> None:
    """v2 declares v1's ``transaction-log`` stage by the same code: restored by name."""
    described = {}
    (tmp_path / "state").mkdir()  # where the spec's store lives
    for file in ("transactions.yaml", "transactions-v2.yaml"):
        spec = load_spec(CONFIG / file)
        ctx = JobContext(spark, spec, StateLayout.at(tmp_path / "state"))
        importlib.import_module(spec.entrypoint).build(ctx)
        described[spec.version] = describe_job_stages(ctx)
    assert list(described["1"]) == list(described["2"]) == [transactions.STAGE]
    plan = UpgradePlan.build(
        "transactions", described["1"], described["2"], from_version="1", to_version="2"
    )
    assert plan.allowed, plan.render()
    assert plan.stage(transactions.STAGE).action is StageAction.RESTORE, plan.render()
