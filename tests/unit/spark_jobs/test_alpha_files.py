"""fleet_alpha's memory of the files it read: late files are read exactly once, files older
than ``max_file_age`` and foreign names are reported by name, and the memory travels in the
offset (so checkpoints and savepoints carry it). A real drop directory, the reader called
as Spark calls it (``latestOffset`` then ``partitions`` for the pair of offsets)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql.streaming import StreamingQuery
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxFiles
from support.source_rows import read_rows

from spark_jobs.sources.alpha import AlphaDataSource, AlphaFiles, AlphaStreamReader
from streamops.sim.alpha import file_name
from streamops.world.restore import restore_plan
from streamops_contract.state.savepoints.manifest import Manifest, StageEntry

SOURCE = "fleetsim-alpha"
NOW = time.time()


def reader(directory: Path, state: Path, **options: str) -> AlphaStreamReader:
    return AlphaStreamReader(
        {"path": str(directory), "source_id": SOURCE, "state_dir": str(state), **options}
    )


def events(state: Path, kind: str) -> list[dict[str, Any]]:
    path = state / SOURCE / f"{os.getpid()}.json"
    if not path.exists():
        return []
    return list(json.loads(path.read_text())[kind])


def drop(directory: Path, n: int, mtime: float | None = None, text: str | None = None) -> str:
    """Write ``pings-<n>.csv`` (one line naming it), its modification time ``mtime``."""
    directory.mkdir(parents=True, exist_ok=True)
    name = file_name(n)
    (directory / name).write_text(text if text is not None else f"{name}\n")
    if mtime is not None:
        os.utime(directory / name, (mtime, mtime))
    return name


def batch(source: AlphaStreamReader, start: dict, end: dict) -> list[str]:
    """The files the batch ``start``→``end`` reads, in order."""
    return [f for p in source.partitions(start, end) for f in p.files]  # type: ignore[attr-defined]


def step(source: AlphaStreamReader, start: dict, limit: Any = None) -> tuple[dict, list[str]]:
    """One trigger: the new end offset (through its JSON, as Spark stores it) and its files."""
    end = json.loads(json.dumps(source.latestOffset(start, limit or ReadAllAvailable())))
    return end, batch(source, start, end)


def test_a_late_file_named_below_the_committed_one_is_read_once(tmp_path: Path) -> None:
    files, state = tmp_path / "drop", tmp_path / "state"
    for n in (1, 2, 4, 5):
        drop(files, n, NOW - 100 + n)
    source = reader(files, state)
    first, read1 = step(source, source.initialOffset())
    assert read1 == [file_name(n) for n in (1, 2, 4, 5)]
    late = drop(files, 3, NOW)
    second, read2 = step(source, first)
    assert read2 == [late]  # read by the next batch
    assert second["file"] == file_name(5)  # the position does not go back
    (event,) = events(state, "late_files")
    assert event["file"] == late and event["read"] is True
    third, read3 = step(source, second)
    assert (third, read3) == (second, [])  # once
    # a restarted query (a new reader) resumes from the checkpointed offset: not read again
    again, read4 = step(reader(files, state), second)
    assert (again, read4) == (second, [])


def test_a_late_file_appearing_after_a_later_one_was_committed_is_read(
    tmp_path: Path,
) -> None:
    files, state = tmp_path / "drop", tmp_path / "state"
    drop(files, 1, NOW - 10)
    drop(files, 3, NOW - 9)
    source = reader(files, state)
    first, _ = step(source, source.initialOffset())
    drop(files, 2, NOW - 8)  # the writer's file 2 was renamed in after 3 (slow writer)
    drop(files, 4, NOW - 7)
    _, read = step(source, first, ReadMaxFiles(1))
    assert read == [file_name(2)]  # the late file first: it is the older data
    # and a restarted reader finds it in the offset's memory, not in its own
    restarted = reader(files, state)
    end, read2 = step(restarted, _)
    assert read2 == [file_name(4)]
    assert step(restarted, end) == (end, [])


def test_a_late_file_older_than_max_file_age_is_reported_by_name_not_read(
    tmp_path: Path,
) -> None:
    files, state = tmp_path / "drop", tmp_path / "state"
    drop(files, 5, NOW - 10)
    drop(files, 6, NOW)
    source = reader(files, state, max_file_age="1h")
    first, _ = step(source, source.initialOffset())
    old = drop(files, 4, NOW - 7200)  # 2 h older than the newest file read
    second, read = step(source, first)
    assert (second, read) == (first, [])
    (event,) = events(state, "late_files")
    assert event["file"] == old and event["read"] is False
    assert "max_file_age" in event["reason"]
    step(source, second)
    assert len(events(state, "late_files")) == 1  # reported once


def test_a_file_whose_name_does_not_match_is_reported_by_name(tmp_path: Path) -> None:
    files, state = tmp_path / "drop", tmp_path / "state"
    drop(files, 1)
    (files / "pings-2.CSV").write_text("x\n")
    (files / "pings-000000000003.csv.bak").write_text("x\n")
    (files / "notes.txt").write_text("x\n")
    (files / f".{file_name(4)}.tmp").write_text("half written\n")  # the writer's temp file
    source = reader(files, state)
    _, read = step(source, source.initialOffset())
    assert read == [file_name(1)]
    reported = sorted(e["file"] for e in events(state, "ignored_files"))
    assert reported == ["notes.txt", "pings-000000000003.csv.bak", "pings-2.CSV"]
    assert all("pings-<n>.csv" in e["reason"] for e in events(state, "ignored_files"))
    step(source, source.initialOffset())
    assert len(events(state, "ignored_files")) == 3  # once each


def test_an_offset_without_the_memory_still_loads(tmp_path: Path) -> None:
    """Offsets written before the memory (``{"source", "file"}``, in checkpoints, savepoints
    and ``start_offset``): every file at or below ``file`` counts as read, as it did."""
    files, state = tmp_path / "drop", tmp_path / "state"
    for n in range(1, 6):
        drop(files, n, NOW - 100 + n)
    old = {"source": SOURCE, "file": file_name(3)}
    source = reader(files, state)
    # a batch both ends of which a reader without memory planned
    assert batch(source, {"source": SOURCE, "file": file_name(1)}, old) == [
        file_name(2),
        file_name(3),
    ]
    end, read = step(source, old)
    assert read == [file_name(4), file_name(5)]
    late = drop(files, 0, NOW)  # pings-0 arrives below every file
    _, read2 = step(source, end)
    assert read2 == [late]
    started = reader(files, state, start_offset=json.dumps(old))
    assert started.initialOffset()["file"] == file_name(3)


def test_a_savepoint_offset_carries_the_memory_into_a_new_stage(tmp_path: Path) -> None:
    files, state = tmp_path / "drop", tmp_path / "state"
    for n in (1, 3):
        drop(files, n, NOW - 10 + n)
    source = reader(files, state)
    first, _ = step(source, source.initialOffset())
    drop(files, 2, NOW)
    second, _ = step(source, first)
    new_stage = reader(files, state, start_offset=json.dumps(second))
    start = new_stage.initialOffset()
    assert start == second
    assert step(new_stage, start) == (start, [])  # 2 was read before the savepoint


def test_the_restore_planner_starts_a_new_stage_at_the_earliest_alpha_offset_with_its_memory(
    tmp_path: Path,
) -> None:
    files, state = tmp_path / "drop", tmp_path / "state"
    for n in (1, 3, 4):
        drop(files, n, NOW - 10 + n)
    source = reader(files, state)
    behind, _ = step(source, source.initialOffset(), ReadMaxFiles(2))  # pings-1, pings-3
    drop(files, 2, NOW)
    ahead, _ = step(source, behind)  # pings-2 (late), pings-4
    manifest = Manifest(
        name="sp-1", job="fleet-pings", version="1", created_at=NOW, checksums=[], bytes=0,
        files=0, stages={"vehicles": StageEntry(sources=[ahead]),
                         "vehicle-stats-1m": StageEntry(sources=[behind])},
    )  # fmt: skip
    plan = restore_plan(manifest, ["vehicles", "trips"])
    assert plan.positions == {SOURCE: behind}  # the stage furthest behind
    assert "position  fleetsim-alpha" in plan.render()
    started = reader(files, state, start_offset=json.dumps(plan.positions[SOURCE]))
    _, read = step(started, started.initialOffset())
    assert read == [file_name(2), file_name(4)]  # what the stage behind had not read


def test_the_memory_in_the_offset_stays_compact_and_is_pruned_by_age(tmp_path: Path) -> None:
    files, state = tmp_path / "drop", tmp_path / "state"
    for n in range(1, 1001):
        drop(files, n, NOW - 5000 + n)
    source = reader(files, state, max_file_age="60s")
    end, read = step(source, source.initialOffset())
    assert len(read) == 1000
    assert len(json.dumps(end)) < 400  # runs of names, not every name
    for n in (1003, 1005):  # gaps: 1001, 1002, 1004 never arrive
        drop(files, n, NOW - 3000 + n)
    end2, _ = step(source, end)
    drop(files, 1010, NOW)  # much newer: everything before is beyond max_file_age
    end3, read3 = step(source, end2)
    assert read3 == [file_name(1010)]
    assert len(end3["read"]) <= len(end2["read"])  # the old runs folded into the floor
    assert step(source, end3) == (end3, [])  # and still count as read
    assert step(reader(files, state, max_file_age="60s"), end3) == (end3, [])


def test_a_late_file_read_with_a_much_newer_one_is_not_folded_away(tmp_path: Path) -> None:
    """The batch that reads a late file near the bound and a file newer than the bound moves
    the bound past the late file: the late file must stay in the memory, or the batch would
    not read it."""
    files, state = tmp_path / "drop", tmp_path / "state"
    drop(files, 1, NOW - 100)
    drop(files, 5, NOW - 90)
    source = reader(files, state, max_file_age="60s")
    first, _ = step(source, source.initialOffset())
    late = drop(files, 2, NOW - 140)  # within 60 s of pings-5... (NOW - 90 - 60 = NOW - 150)
    drop(files, 6, NOW)  # ...but not of pings-6, read in the same batch
    second, read = step(source, first)
    assert read == [late, file_name(6)]
    assert step(source, second) == (second, [])


def test_a_late_file_waiting_for_the_next_batch_is_not_folded_away(tmp_path: Path) -> None:
    """Late files beyond a batch's limit wait for the next batch, and are read then."""
    files, state = tmp_path / "drop", tmp_path / "state"
    for n in (1, 2, 5):
        drop(files, n, NOW - 100 + n)
    source = reader(files, state, max_file_age="60s")
    first, _ = step(source, source.initialOffset())
    drop(files, 3, NOW - 50)  # two late files, one batch admits one file
    drop(files, 4, NOW - 49)
    second, read = step(source, first, ReadMaxFiles(1))
    third, read2 = step(source, second, ReadMaxFiles(1))
    assert read + read2 == [file_name(3), file_name(4)]
    assert step(source, third) == (third, [])


def test_invalid_utf8_lines_are_flagged_and_keep_their_text_with_replacements(
    tmp_path: Path,
) -> None:
    files = tmp_path / "drop"
    files.mkdir()
    name = file_name(1)
    (files / name).write_bytes(b"good,line\nbad \xff\xfe line\n\xe2\x82\xac ok\ncut \xe2\x82\n")
    rows = read_rows(reader(files, tmp_path / "state"), AlphaFiles([name]))
    assert rows == [
        (name, 1, "good,line", False),
        (name, 2, "bad \ufffd\ufffd line", True),
        (name, 3, "\u20ac ok", False),
        (name, 4, "cut \ufffd", True),
    ]


def test_a_streaming_query_reads_a_late_file_once_across_a_restart(
    spark: SparkSession, tmp_path: Path
) -> None:
    """A real local Spark query over fleet_alpha, its offsets in a checkpoint: a late file is
    read by the next batch, once, also by the query restarted from the checkpoint."""
    spark.dataSource.register(AlphaDataSource)
    files, checkpoint = tmp_path / "drop", tmp_path / "checkpoint"
    for n in (1, 2, 4):
        drop(files, n, NOW - 100 + n)
    seen: list[str] = []

    def run() -> StreamingQuery:
        stream = (spark.readStream.format("fleet_alpha").option("path", str(files))
                  .option("source_id", SOURCE).load())  # fmt: skip
        return (stream.writeStream.option("checkpointLocation", str(checkpoint))
                .foreachBatch(lambda df, _: seen.extend(r.raw for r in df.collect()))
                .start())  # fmt: skip

    query = run()
    try:
        query.processAllAvailable()
        drop(files, 3, NOW)  # late: below the committed pings-4
        query.processAllAvailable()
    finally:
        query.stop()
    drop(files, 0, NOW + 1)  # late again, while the query is down
    drop(files, 5, NOW + 2)
    query = run()
    try:
        query.processAllAvailable()
    finally:
        query.stop()
    assert sorted(seen) == [file_name(n) for n in range(6)]  # each line once
    offsets = sorted((checkpoint / "offsets").glob("[0-9]*"), key=lambda p: int(p.name))
    last = json.loads(offsets[-1].read_text().splitlines()[-1])
    assert last["file"] == file_name(5)
    assert last["read"] == [[file_name(0), file_name(5)]]  # the memory is in the checkpoint
