"""The fleet_alpha and fleet_beta stream readers, called directly (no Spark query).

Alpha reads files in a temporary directory (and the output of a real fleetsim-alpha run);
beta talks HTTP to a real fleetsim-beta on a free loopback port.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadMaxFiles,
    ReadMaxRows,
    ReadMinRows,
)
from support.beta_server import beta_serving, stream_of
from support.source_rows import read_rows

from spark_jobs.sources.alpha import (
    AlphaDataSource,
    AlphaFiles,
    AlphaSourceError,
    AlphaStreamReader,
    list_files,
)
from spark_jobs.sources.beta import (
    BetaDataSource,
    BetaRange,
    BetaSourceError,
    BetaStreamReader,
)
from spark_jobs.sources.positions import REHEARSAL_RECORDS
from spark_jobs.sources.source_state import SourceResetError
from streamops.sim.alpha import AlphaSimulator, file_name
from streamops.sim.beta import BetaSimulator
from streamops.sim.journal import read_journal

BETA_PINGS = 10_500  # more than one /pings page (10000 records)
SMALL_HISTORY = 100
SMALL_PINGS = 500


# --- alpha ---------------------------------------------------------------------------------
def write_files(directory: Path, contents: dict[str, str]) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for name, text in contents.items():
        (directory / name).write_text(text, encoding="utf-8")


def A(name: str) -> dict[str, str]:
    """An alpha offset as the reader stores it."""
    return {"source": "alpha-test", "file": name}


def at(offset: dict) -> dict[str, str]:
    """An offset's position (its memory of the files read aside), as :func:`A` gives it."""
    return {"source": offset["source"], "file": offset["file"]}


def alpha_reader(directory: Path, **options: str) -> AlphaStreamReader:
    return AlphaStreamReader({"path": str(directory), "source_id": "alpha-test", **options})


def alpha_names(count: int) -> list[str]:
    return [file_name(n) for n in range(1, count + 1)]


@pytest.fixture
def drop(tmp_path: Path) -> Path:
    """A drop directory with five ping files of two lines each, plus files to ignore."""
    directory = tmp_path / "drop"
    write_files(directory, {name: f"{name} a\n{name} b\n" for name in alpha_names(5)})
    write_files(
        directory,
        {
            f".{file_name(6)}.tmp": "half written\n",  # fleetsim-alpha's temp name
            "notes.txt": "not a ping file\n",
            "pings-7.csv.bak": "backup\n",
        },
    )
    return directory


def test_alpha_needs_a_path() -> None:
    with pytest.raises(AlphaSourceError, match="needs the option 'path'"):
        AlphaStreamReader({})


def test_alpha_creates_the_directory(tmp_path: Path) -> None:
    alpha_reader(tmp_path / "new" / "drop")
    assert (tmp_path / "new" / "drop").is_dir()


def test_alpha_initial_offset(drop: Path) -> None:
    assert alpha_reader(drop).initialOffset() == A("")
    assert alpha_reader(drop, start_after="").initialOffset() == A("")
    start = file_name(2)
    assert alpha_reader(drop, start_after=start).initialOffset() == A(start)


def test_alpha_rehearsal_reads_only_the_newest_file(drop: Path, tmp_path: Path) -> None:
    """A warm standby's rehearsal starts before the newest file, whatever else is set."""
    reader = alpha_reader(drop, rehearsal="true", start_after=file_name(1))
    assert reader.initialOffset() == A(file_name(4))
    write_files(drop, {file_name(6): "x\n"})
    assert reader.initialOffset() == A(file_name(4))  # Spark asks again at the first batch
    assert alpha_reader(tmp_path / "empty", rehearsal="true").initialOffset() == A("")


def test_alpha_default_read_limit(drop: Path) -> None:
    assert alpha_reader(drop).getDefaultReadLimit() == ReadMaxFiles(200)
    assert alpha_reader(drop, max_files_per_batch="3").getDefaultReadLimit() == ReadMaxFiles(3)


def test_alpha_latest_offset_read_max_files(drop: Path) -> None:
    reader = alpha_reader(drop)
    names = alpha_names(5)
    assert at(reader.latestOffset({"file": ""}, ReadMaxFiles(2))) == A(names[1])
    assert at(reader.latestOffset({"file": names[1]}, ReadMaxFiles(2))) == A(names[3])
    assert at(reader.latestOffset({"file": names[3]}, ReadMaxFiles(2))) == A(names[4])


def test_alpha_latest_offset_read_all_available(drop: Path) -> None:
    reader = alpha_reader(drop, max_files_per_batch="1")
    assert at(reader.latestOffset({"file": ""}, ReadAllAvailable())) == A(file_name(5))


def test_alpha_latest_offset_other_limits_use_the_option(drop: Path) -> None:
    reader = alpha_reader(drop, max_files_per_batch="3")
    assert at(reader.latestOffset({"file": ""}, ReadMinRows(1))) == A(file_name(3))


def test_alpha_latest_offset_without_new_files_stays(drop: Path) -> None:
    reader = alpha_reader(drop)
    last = A(file_name(5))
    assert reader.latestOffset(last, ReadAllAvailable()) == last
    assert reader.latestOffset(last, ReadMaxFiles(10)) == last


def test_alpha_latest_offset_from_start_after(drop: Path) -> None:
    reader = alpha_reader(drop, start_after=file_name(3))
    start = reader.initialOffset()
    assert at(reader.latestOffset(start, ReadMaxFiles(1))) == A(file_name(4))


def test_alpha_ignores_hidden_temp_and_foreign_files(drop: Path) -> None:
    assert list_files(str(drop), "") == alpha_names(5)
    reader = alpha_reader(drop)
    end = reader.latestOffset({"file": ""}, ReadAllAvailable())
    assert at(end) == A(file_name(5))
    files = [f for p in reader.partitions({"file": ""}, end)
             for f in p.files]  # type: ignore[attr-defined]  # fmt: skip
    assert files == alpha_names(5)
    # read by their names, the others reported (in the source's state) by theirs
    ignored = sorted(e["file"] for e in reader.state.events["ignored_files"])
    assert ignored == ["notes.txt", "pings-7.csv.bak"]


def test_alpha_empty_directory(tmp_path: Path) -> None:
    reader = alpha_reader(tmp_path / "empty")
    start = reader.initialOffset()
    end = reader.latestOffset(start, ReadAllAvailable())
    assert end == start == A("")
    assert reader.partitions(start, end) == []


def test_alpha_partitions_for_an_empty_range(drop: Path) -> None:
    reader = alpha_reader(drop)
    assert reader.partitions({"file": ""}, {"file": ""}) == []
    assert reader.partitions({"file": file_name(3)}, {"file": file_name(3)}) == []


def test_alpha_partitions_group_files(drop: Path) -> None:
    reader = alpha_reader(drop, files_per_partition="2")
    parts = reader.partitions({"file": ""}, {"file": file_name(5)})
    assert all(isinstance(p, AlphaFiles) for p in parts)
    names = alpha_names(5)
    assert [p.files for p in parts] == [names[0:2], names[2:4], names[4:5]]  # type: ignore[attr-defined]


def test_alpha_partitions_cover_exactly_the_range(drop: Path) -> None:
    reader = alpha_reader(drop, files_per_partition="10")
    parts = reader.partitions({"file": file_name(1)}, {"file": file_name(4)})
    assert [p.files for p in parts] == [alpha_names(4)[1:]]  # type: ignore[attr-defined]


def test_alpha_missing_end_file_raises(drop: Path) -> None:
    reader = alpha_reader(drop)
    (drop / file_name(4)).unlink()
    with pytest.raises(AlphaSourceError, match=f"{file_name(4)} recorded as a batch end"):
        reader.partitions({"file": file_name(1)}, {"file": file_name(4)})
    with pytest.raises(AlphaSourceError, match="is missing from"):
        reader.partitions({"file": ""}, {"file": file_name(9)})


def test_alpha_missing_directory_raises(tmp_path: Path) -> None:
    reader = alpha_reader(tmp_path / "drop")
    (tmp_path / "drop").rmdir()
    with pytest.raises(AlphaSourceError, match="does not exist"):
        reader.latestOffset({"file": ""}, ReadAllAvailable())


def test_alpha_read_yields_file_line_raw_and_skips_empty_lines(tmp_path: Path) -> None:
    directory = tmp_path / "drop"
    write_files(
        directory,
        {
            file_name(1): "one\n\ntwo\r\nthree",  # empty line 2, CRLF, no final newline
            file_name(2): "\n\nfour\n\n",
            file_name(3): "",
        },
    )
    reader = alpha_reader(directory)
    rows = read_rows(reader, AlphaFiles(alpha_names(3)))
    assert rows == [
        (file_name(1), 1, "one", False),
        (file_name(1), 3, "two", False),
        (file_name(1), 4, "three", False),
        (file_name(2), 3, "four", False),
    ]


def test_alpha_read_is_repeatable(drop: Path) -> None:
    reader = alpha_reader(drop)
    part = AlphaFiles(alpha_names(2))
    assert read_rows(reader, part) == read_rows(reader, part)


def test_alpha_reads_a_real_simulator_run_completely(tmp_path: Path) -> None:
    directory, journal = tmp_path / "drop", tmp_path / "journal.jsonl"
    AlphaSimulator(
        directory, rate=100_000, max_pings=250, pings_per_file=100, malformed_every=7,
        journal=journal,
    ).run()  # fmt: skip
    reader = alpha_reader(directory, files_per_partition="2")
    start = reader.initialOffset()
    end = reader.latestOffset(start, ReadAllAvailable())
    assert at(end) == A(file_name(3))
    rows = [row for part in reader.partitions(start, end) for row in read_rows(reader, part)]
    records = read_journal(journal)
    assert [(file, raw) for file, _, raw, _ in rows] == [(r.file, r.raw) for r in records]


def test_alpha_data_source() -> None:
    assert AlphaDataSource.name() == "fleet_alpha"
    fields = [f.name for f in AlphaDataSource({}).schema().fields]
    assert fields == ["file", "line", "raw", "invalid_utf8"]


# --- beta ----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def beta() -> Iterator[BetaSimulator]:
    """A real fleetsim-beta that emitted BETA_PINGS records and keeps them all."""
    with beta_serving(BETA_PINGS, 100_000) as sim:
        yield sim


@pytest.fixture(scope="module")
def short_beta() -> Iterator[BetaSimulator]:
    """A fleetsim-beta holding only the last SMALL_HISTORY of its SMALL_PINGS records."""
    with beta_serving(SMALL_PINGS, SMALL_HISTORY) as sim:
        yield sim


def B(sequence: int, stream: str | None = None) -> dict[str, object]:
    """A beta offset as the reader stores it."""
    return {"source": "beta-test", "sequence": sequence, "stream": stream}


def beta_reader(sim: BetaSimulator, **options: str) -> BetaStreamReader:
    return BetaStreamReader({"url": sim.url, "source_id": "beta-test", **options})


def test_beta_needs_a_url() -> None:
    with pytest.raises(BetaSourceError, match="needs the option 'url'"):
        BetaStreamReader({})


def test_beta_initial_offset_is_before_the_oldest_record(beta: BetaSimulator) -> None:
    st = stream_of(beta)
    assert beta_reader(beta).initialOffset() == B(0, st)
    assert beta_reader(beta, start_sequence="").initialOffset() == B(0, st)


def test_beta_initial_offset_of_a_short_history(short_beta: BetaSimulator) -> None:
    st = stream_of(short_beta)
    expected = SMALL_PINGS - SMALL_HISTORY
    assert beta_reader(short_beta).initialOffset() == B(expected, st)


def test_beta_rehearsal_reads_only_the_newest_records(
    beta: BetaSimulator, short_beta: BetaSimulator
) -> None:
    assert beta_reader(beta, rehearsal="true", start_sequence="3").initialOffset() == B(
        BETA_PINGS - REHEARSAL_RECORDS, stream_of(beta)
    )
    # a history shorter than the rehearsal: from its oldest record
    assert beta_reader(short_beta, rehearsal="true").initialOffset() == B(
        max(SMALL_PINGS - SMALL_HISTORY, SMALL_PINGS - REHEARSAL_RECORDS), stream_of(short_beta)
    )


def test_beta_start_sequence(beta: BetaSimulator) -> None:
    st = stream_of(beta)
    assert beta_reader(beta, start_sequence="250").initialOffset() == B(250, st)


def test_beta_default_read_limit(beta: BetaSimulator) -> None:
    assert beta_reader(beta).getDefaultReadLimit() == ReadMaxRows(50000)
    limited = beta_reader(beta, max_records_per_batch="7")
    assert limited.getDefaultReadLimit() == ReadMaxRows(7)


def test_beta_latest_offset_read_max_rows(beta: BetaSimulator) -> None:
    st = stream_of(beta)
    reader = beta_reader(beta)
    assert reader.latestOffset({"sequence": 0}, ReadMaxRows(300)) == B(300, st)
    assert reader.latestOffset({"sequence": 300}, ReadMaxRows(300)) == B(600, st)
    near_end = B(BETA_PINGS - 10, st)
    assert reader.latestOffset(near_end, ReadMaxRows(300)) == B(BETA_PINGS, st)


def test_beta_latest_offset_read_all_available(beta: BetaSimulator) -> None:
    st = stream_of(beta)
    reader = beta_reader(beta, max_records_per_batch="5")
    assert reader.latestOffset({"sequence": 0}, ReadAllAvailable()) == B(BETA_PINGS, st)


def test_beta_latest_offset_other_limits_use_the_option(beta: BetaSimulator) -> None:
    st = stream_of(beta)
    reader = beta_reader(beta, max_records_per_batch="123")
    assert reader.latestOffset({"sequence": 10}, ReadMinRows(1)) == B(133, st)


def test_beta_latest_offset_stays_at_the_head(beta: BetaSimulator) -> None:
    st = stream_of(beta)
    reader = beta_reader(beta)
    at_head = B(BETA_PINGS, st)
    assert reader.latestOffset(at_head, ReadAllAvailable()) == at_head


def test_beta_head_below_the_committed_offset_fails_naming_both(beta: BetaSimulator) -> None:
    ahead = B(BETA_PINGS + 50, stream_of(beta))
    with pytest.raises(SourceResetError) as info:
        beta_reader(beta).latestOffset(ahead, ReadMaxRows(10))
    message = str(info.value)
    assert f"committed offset is sequence {BETA_PINGS + 50}" in message
    assert f"its head ({BETA_PINGS}) is below" in message
    assert "on_source_reset: restart_from_earliest" in message


def test_beta_partitions_split_by_partition_size(beta: BetaSimulator) -> None:
    reader = beta_reader(beta, partition_size="300")
    parts = reader.partitions({"sequence": 0}, {"sequence": 1000})
    assert all(isinstance(p, BetaRange) for p in parts)
    bounds = [(p.since, p.until) for p in parts]  # type: ignore[attr-defined]
    assert bounds == [(0, 300), (300, 600), (600, 900), (900, 1000)]


def test_beta_partitions_for_an_empty_range(beta: BetaSimulator) -> None:
    assert beta_reader(beta).partitions({"sequence": 42}, {"sequence": 42}) == []


def test_beta_read_returns_exactly_the_range(beta: BetaSimulator) -> None:
    reader = beta_reader(beta)
    rows = read_rows(reader, BetaRange(100, 350))
    assert [seq for seq, _ in rows] == list(range(101, 351))
    assert all(json.loads(raw)["sequence"] == seq for seq, raw in rows)
    assert [raw for _, raw in rows] == beta.state.read(100, 250)  # served byte for byte


def test_beta_read_spans_several_pages(beta: BetaSimulator) -> None:
    reader = beta_reader(beta, partition_size=str(BETA_PINGS))
    (part,) = reader.partitions({"sequence": 0}, {"sequence": BETA_PINGS})
    sequences = [seq for seq, _ in read_rows(reader, part)]
    assert sequences == list(range(1, BETA_PINGS + 1))


def test_beta_partitions_read_together_cover_the_batch(beta: BetaSimulator) -> None:
    st = stream_of(beta)
    reader = beta_reader(beta, partition_size="64")
    start = B(17, st)
    end = reader.latestOffset(start, ReadMaxRows(500))
    sequences = [seq for p in reader.partitions(start, end) for seq, _ in read_rows(reader, p)]
    assert sequences == list(range(18, 518))


def test_beta_since_older_than_history_names_the_missing_range(
    short_beta: BetaSimulator,
) -> None:
    reader = beta_reader(short_beta)
    oldest = SMALL_PINGS - SMALL_HISTORY + 1
    with pytest.raises(SourceResetError) as info:
        read_rows(reader, BetaRange(0, 50))
    message = str(info.value)
    assert f"no longer holds sequences 1..{oldest - 1}" in message
    assert f"oldest available: {oldest}" in message
    assert short_beta.url in message


def test_beta_read_of_the_held_history_works(short_beta: BetaSimulator) -> None:
    reader = beta_reader(short_beta)
    start = reader.initialOffset()
    end = reader.latestOffset(start, ReadAllAvailable())
    rows = [row for p in reader.partitions(start, end) for row in read_rows(reader, p)]
    assert [seq for seq, _ in rows] == list(range(SMALL_PINGS - SMALL_HISTORY + 1, SMALL_PINGS + 1))


def test_beta_read_beyond_the_head_fails_clearly(beta: BetaSimulator) -> None:
    with pytest.raises(SourceResetError, match="returned no records"):
        read_rows(beta_reader(beta), BetaRange(BETA_PINGS, BETA_PINGS + 5))


def test_beta_data_source() -> None:
    assert BetaDataSource.name() == "fleet_beta"
    assert [f.name for f in BetaDataSource({}).schema().fields] == ["sequence", "raw"]


def test_alpha_pause_file_admits_nothing(tmp_path: Path) -> None:
    drop = tmp_path / "drop"
    drop.mkdir()
    (drop / "pings-000000000001.csv").write_text("x\n")
    pause = tmp_path / "paused"
    reader = alpha_reader(drop, pause_file=str(pause))
    pause.touch()
    assert reader.latestOffset(A(""), ReadAllAvailable()) == A("")
    pause.unlink()
    assert at(reader.latestOffset(A(""), ReadAllAvailable())) == A("pings-000000000001.csv")


def test_alpha_start_offset_from_a_savepoint(tmp_path: Path) -> None:
    start = '{"source": "fleetsim-alpha", "file": "pings-000000000007.csv"}'
    assert alpha_reader(tmp_path, start_offset=start).initialOffset() == A("pings-000000000007.csv")


def test_beta_pause_file_and_start_offset(beta: BetaSimulator, tmp_path: Path) -> None:
    st = stream_of(beta)
    pause = tmp_path / "paused"
    pause.touch()
    reader = beta_reader(beta, pause_file=str(pause), start_offset='{"sequence": 12}')
    assert reader.initialOffset() == B(12)  # without a stream: the next batch adopts the head's
    assert reader.latestOffset(B(12, st), ReadAllAvailable()) == B(12, st)
