"""A slow stream's data held back at its source: the rule on a fake clock, then the alpha,
beta and journal readers called directly (files in a temporary directory, a real fleetsim-beta
on a loopback port, a real SQLite journal): below the minimum a trigger gets the committed
position (no batch, nothing taken), at the minimum or after the longest delay everything
waiting; a new reader, a reset and ``ReadAllAvailable`` are never held."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxFiles, ReadMaxRows
from support.beta_server import beta_serving, stream_of

from spark_jobs.sources.alpha import AlphaStreamReader
from spark_jobs.sources.beta import BetaStreamReader
from spark_jobs.sources.holdback import Holdback, HoldbackError
from spark_jobs.sources.journal import JournalStreamReader
from spark_jobs.sources.source_state import SourceResetError
from streamops.sim.alpha import file_name
from streamops.sim.beta import BetaSimulator
from streamops_contract.sinks import journal_store as js
from streamops_contract.sinks.journal_store import Change


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def held(min_units: int, max_delay: float) -> tuple[Holdback, Clock]:
    clock = Clock()
    return Holdback(min_units=min_units, max_delay=max_delay, clock=clock), clock


def test_the_first_answer_is_never_held() -> None:
    rule, _ = held(100, 10.0)
    assert rule.lets_through(1)


def test_below_the_minimum_data_waits_until_the_longest_delay() -> None:
    rule, clock = held(100, 10.0)
    assert rule.lets_through(5)  # t = 0: the first answer
    clock.now += 9.9
    assert not rule.lets_through(99)
    clock.now += 0.1
    assert rule.lets_through(99)  # the next slot
    clock.now += 1.0
    assert not rule.lets_through(3)  # the delay counts from the last time it let data through


def test_data_filling_half_of_a_bounded_source_is_never_held() -> None:
    rule, clock = held(1000, 10.0)
    assert rule.lets_through(5)
    clock.now += 1
    assert rule.holds(199, ReadMaxRows(50000), room=400)
    assert rule.holds(199, ReadMaxRows(50000))  # unbounded
    assert not rule.holds(200, ReadMaxRows(50000), room=400)  # the next to go at the source


def test_sources_with_their_own_first_answers_let_data_through_together() -> None:
    """Two sources of one query (their own processes, one wall clock): the delay is counted
    on the clock's grid of ``max_delay`` slots, so both let data through at the same trigger."""
    clock = Clock()
    alpha = Holdback(min_units=100, max_delay=10.0, clock=clock)
    beta = Holdback(min_units=100, max_delay=10.0, clock=clock)
    assert alpha.lets_through(1)  # t = 1000
    clock.now += 4
    assert beta.lets_through(1)  # t = 1004, its first answer
    clock.now += 5
    assert not alpha.lets_through(1) and not beta.lets_through(1)  # t = 1009
    clock.now += 1.5
    assert alpha.lets_through(1) and beta.lets_through(1)  # t = 1010.5: the next slot


def test_the_minimum_lets_through_at_once() -> None:
    rule, clock = held(100, 10.0)
    assert rule.lets_through(5)
    clock.now += 0.5
    assert rule.lets_through(100)
    clock.now += 0.5
    assert rule.lets_through(5000)


def test_no_minimum_never_holds() -> None:
    rule, _ = held(0, 10.0)
    assert all(rule.lets_through(1) for _ in range(5))


def test_options() -> None:
    rule = Holdback.from_options({"min_records_per_batch": "500"}, "min_records_per_batch")
    assert (rule.min_units, rule.max_delay) == (500, 10.0)
    rule = Holdback.from_options(
        {"min_files_per_batch": "4", "max_batch_delay": "2.5"}, "min_files_per_batch"
    )
    assert (rule.min_units, rule.max_delay) == (4, 2.5)
    assert Holdback.from_options({}, "min_records_per_batch").min_units == 0
    with pytest.raises(HoldbackError, match="'min_records_per_batch'.*numbers"):
        Holdback.from_options({"min_records_per_batch": "many"}, "min_records_per_batch")
    for delay in ("0", "61"):
        with pytest.raises(HoldbackError, match=r"'max_batch_delay' in \(0, 60\] seconds"):
            Holdback.from_options(
                {"min_records_per_batch": "5", "max_batch_delay": delay}, "min_records_per_batch"
            )


# --- the readers ---------------------------------------------------------------------------
def test_alpha_holds_few_files_and_never_late_ones(tmp_path: Path) -> None:
    drop = tmp_path / "drop"
    drop.mkdir()
    for n in (1, 2, 3):
        (drop / file_name(n)).write_text("x\n")
    reader = AlphaStreamReader(
        {"path": str(drop), "source_id": "a", "min_files_per_batch": "5", "max_batch_delay": "10"}
    )
    clock = Clock()
    reader.holdback.clock = clock
    first = reader.latestOffset({"source": "a", "file": ""}, ReadMaxFiles(200))
    assert first["file"] == file_name(3)  # a new reader's first answer: at once
    (drop / file_name(4)).write_text("x\n")
    clock.now += 2
    assert reader.latestOffset(first, ReadMaxFiles(200)) == first  # held: 1 file of 5
    assert reader.latestOffset(first, ReadAllAvailable())["file"] == file_name(4)
    (drop / file_name(5)).write_text("x\n")
    clock.now += 2
    assert reader.latestOffset(first, ReadMaxFiles(200)) == first  # 2 files, 2 s: held
    clock.now += 10
    assert reader.latestOffset(first, ReadMaxFiles(200))["file"] == file_name(5)
    # a late file (below the committed one, never read) is never held back
    (drop / file_name(5)).rename(drop / file_name(6))
    (drop / file_name(4)).rename(drop / "pings-000000000000.csv")
    clock.now += 1
    late = reader.latestOffset(first, ReadMaxFiles(200))
    assert late != first


@pytest.fixture(scope="module")
def beta() -> Iterator[BetaSimulator]:
    with beta_serving(500, 100_000) as sim:
        yield sim


def test_beta_holds_few_records_at_the_server(beta: BetaSimulator) -> None:
    st = stream_of(beta)
    reader = BetaStreamReader(
        {"url": beta.url, "source_id": "b", "min_records_per_batch": "100", "max_batch_delay": "5"}
    )
    clock = Clock()
    reader.holdback.clock = clock
    start = {"source": "b", "sequence": 0, "stream": st}
    assert reader.latestOffset(start, ReadMaxRows(50000))["sequence"] == 500  # first answer
    near = {"source": "b", "sequence": 450, "stream": st}
    clock.now += 1
    assert reader.latestOffset(near, ReadMaxRows(50000)) == near  # 50 of 100 waiting
    assert reader.latestOffset(near, ReadAllAvailable())["sequence"] == 500
    clock.now += 1
    assert reader.latestOffset(near, ReadMaxRows(50000)) == near
    clock.now += 5
    assert reader.latestOffset(near, ReadMaxRows(50000))["sequence"] == 500
    # another stream (the server was replaced) is never held: its reset is decided at once
    other = {"source": "b", "sequence": 450, "stream": "another"}
    clock.now += 1
    with pytest.raises(SourceResetError, match="sequence 450 of stream another"):
        reader.latestOffset(other, ReadMaxRows(50000))


def holds_less_than_half_of_the_room(
    reader: Any, clock: Clock, source: str, stream: str | None, last: int, room: int
) -> None:
    """``reader``'s source keeps ``room`` units, up to ``last``, and its minimum is larger:
    after the first answer, fewer than half of ``room`` waiting are held, half go at once."""
    first = {"source": source, "sequence": last - 5, "stream": stream}
    assert reader.latestOffset(first, ReadMaxRows(50000))["sequence"] == last  # first answer
    clock.now += 1
    below = {"source": source, "sequence": last - room // 2 + 1, "stream": stream}
    assert reader.latestOffset(below, ReadMaxRows(50000)) == below
    half = {"source": source, "sequence": last - room // 2, "stream": stream}
    assert reader.latestOffset(half, ReadMaxRows(50000))["sequence"] == last


def test_beta_never_holds_records_its_server_would_drop_soon() -> None:
    """A minimum beyond the server's history (200 records): records wait while they fill
    less than half of it, then go, before the server drops the oldest of them."""
    with beta_serving(500, 200) as sim:
        reader = BetaStreamReader({"url": sim.url, "source_id": "b", "max_batch_delay": "5",
                                   "min_records_per_batch": "1000"})  # fmt: skip
        clock = Clock()
        reader.holdback.clock = clock
        holds_less_than_half_of_the_room(reader, clock, "b", stream_of(sim), 500, 200)


def journal_of_30(
    tmp_path: Path, min_records: int, capacity: int = js.DEFAULT_CAPACITY
) -> tuple[JournalStreamReader, Clock, str | None]:
    """A real SQLite journal of 30 entries (keeping ``capacity``), a reader with a holdback
    of ``min_records`` and 5 s on a fake clock, and the journal's stream."""
    url = f"sqlite:///{tmp_path / 'journal.db'}"
    engine = js.engine_for(url)
    js.apply_changes(engine, [Change("insert", f"tx-{n}", float(n), "new") for n in range(1, 31)],
                     capacity=capacity)  # fmt: skip
    reader = JournalStreamReader({"url": url, "source_id": "j", "max_batch_delay": "5",
                                  "min_records_per_batch": str(min_records)})  # fmt: skip
    clock = Clock()
    reader.holdback.clock = clock
    return reader, clock, js.head(engine).stream


def test_journal_holds_few_entries_in_the_store(tmp_path: Path) -> None:
    reader, clock, stream = journal_of_30(tmp_path, 20)
    start = {"source": "j", "sequence": 0, "stream": stream}
    assert reader.latestOffset(start, ReadMaxRows(1000))["sequence"] == 30
    at_25 = {"source": "j", "sequence": 25, "stream": stream}
    clock.now += 1
    assert reader.latestOffset(at_25, ReadMaxRows(1000)) == at_25
    at_5 = {"source": "j", "sequence": 5, "stream": stream}
    assert reader.latestOffset(at_5, ReadMaxRows(1000))["sequence"] == 30  # 25 >= 20
    clock.now += 1
    assert reader.latestOffset(at_25, ReadMaxRows(1000)) == at_25
    clock.now += 5
    assert reader.latestOffset(at_25, ReadMaxRows(1000))["sequence"] == 30


def test_the_journal_never_holds_entries_it_would_drop_soon(tmp_path: Path) -> None:
    reader, clock, stream = journal_of_30(tmp_path, 100, capacity=20)
    holds_less_than_half_of_the_room(reader, clock, "j", stream, 30, 20)


# --- in a streaming query ------------------------------------------------------------------
def test_a_query_reads_a_slow_stream_every_delay_and_loses_nothing(
    spark: SparkSession, tmp_path: Path
) -> None:
    """A file every 0.2 s, a trigger every 0.2 s: with a minimum of 100 files and 1.5 s of
    longest delay the query runs a batch about every 1.5 s, not every trigger, and reads every
    file."""
    from spark_jobs.sources.alpha import AlphaDataSource

    drop = tmp_path / "drop"
    drop.mkdir()
    spark.dataSource.register(AlphaDataSource)
    frame = (
        spark.readStream.format("fleet_alpha")
        .option("path", str(drop))
        .option("source_id", "held")
        .option("min_files_per_batch", "100")
        .option("max_batch_delay", "1.5")
        .load()
    )
    seen: list[int] = []
    query = (
        frame.writeStream.foreachBatch(lambda df, _id: seen.append(df.count()))
        .trigger(processingTime="200 milliseconds")
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .start()
    )
    try:
        for n in range(1, 26):
            (drop / file_name(n)).write_text(f"line {n}\n")
            time.sleep(0.2)
        deadline = time.monotonic() + 20
        while sum(seen) < 25 and time.monotonic() < deadline:
            time.sleep(0.2)
    finally:
        query.stop()
    assert sum(seen) == 25  # every file's line, once
    batches = [rows for rows in seen if rows]
    assert 2 <= len(batches) <= 6, seen  # about 5 s / 1.5 s, not 25
