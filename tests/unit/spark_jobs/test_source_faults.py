"""The sources under faults from outside: a beta server that is down, frozen, reset, replaced
or missing records (real fleetsim-beta servers and real sockets on loopback), alpha files that
arrive out of order or change after they were read (a real directory)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.responses import JSONResponse
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxFiles, ReadMaxRows
from support.beta_server import beta_serving, stream_of
from support.source_rows import read_rows

from spark_jobs.sources.alpha import AlphaStreamReader
from spark_jobs.sources.beta import BetaRange, BetaSourceError, BetaStreamReader, fetch_range
from spark_jobs.sources.source_state import (
    SourceResetError,
    SourceState,
    merge_states,
    on_reset_policy,
    source_reset_message,
)
from spark_jobs.sources.spool import Spool, spooled_ranges
from streamops.sim.beta import BetaSimulator, ServerThread

PINGS = 500
HISTORY = 200


@pytest.fixture(scope="module")
def sim() -> Iterator[BetaSimulator]:
    """A fleetsim-beta that emitted PINGS records and holds only the last HISTORY."""
    with beta_serving(PINGS, HISTORY) as beta:
        yield beta


@pytest.fixture
def refused_url() -> str:
    """A loopback URL where nothing listens (the port was just free)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/pings"


@pytest.fixture
def frozen_url() -> Iterator[str]:
    """A server that accepts connections and never answers (like a SIGSTOPped process)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(16)
        yield f"http://127.0.0.1:{s.getsockname()[1]}/pings"


def reader(url: str, state_dir: Path | None = None, **options: str) -> BetaStreamReader:
    opts = {"url": url, "source_id": "fleetsim-beta", **options}
    if state_dir is not None:
        opts["state_dir"] = str(state_dir)
    return BetaStreamReader(opts)


def state_file(state_dir: Path) -> dict:
    return json.loads((state_dir / "fleetsim-beta" / f"{os.getpid()}.json").read_text())


# --- a server that does not answer degrades the source; it does not fail the query --------
def test_refused_server_reports_no_new_data_and_degrades(refused_url: str, tmp_path: Path) -> None:
    source = reader(refused_url, tmp_path)
    start = {"source": "fleetsim-beta", "sequence": 40, "stream": "s1"}
    assert source.latestOffset(start, ReadMaxRows(10)) == start
    doc = state_file(tmp_path)
    assert doc["state"] == "degraded"
    assert "did not answer (ConnectionError)" in doc["reason"]
    assert source.state.describe().startswith("degraded since ")
    # within the backoff it does not even ask: the trigger returns at once
    assert source.latestOffset(start, ReadMaxRows(10)) == start
    assert source.state.failures == 1


def test_frozen_server_costs_a_trigger_at_most_the_head_timeout(
    frozen_url: str, tmp_path: Path
) -> None:
    source = reader(frozen_url, tmp_path, head_timeout="0.3")
    start = {"source": "fleetsim-beta", "sequence": 0, "stream": None}
    began = time.monotonic()
    assert source.latestOffset(start, ReadAllAvailable()) == start
    assert time.monotonic() - began < 3  # not the 10 s read timeout of a partition
    assert "ReadTimeout" in state_file(tmp_path)["reason"]


def test_a_degraded_source_recovers_when_the_server_answers(
    sim: BetaSimulator, tmp_path: Path
) -> None:
    source = reader(sim.url, tmp_path)
    source.state.degraded("test: was down")
    source.state._next_try = 0.0  # the backoff has passed
    start = {"source": "fleetsim-beta", "sequence": PINGS - 10, "stream": stream_of(sim)}
    end = source.latestOffset(start, ReadAllAvailable())
    assert end["sequence"] == PINGS
    assert state_file(tmp_path)["state"] == "ok"


def test_backoff_grows_and_is_capped() -> None:
    now = [1000.0]
    state = SourceState("s", None, clock=lambda: now[0])
    waits = []
    for _ in range(7):
        state.degraded("down")
        waits.append(state._next_try - now[0])
    assert waits == [1, 2, 4, 5, 5, 5, 5]
    assert state.since == 1000.0


def test_a_partition_read_retries_then_fails_clearly(refused_url: str) -> None:
    source = reader(refused_url, read_patience="1")
    began = time.monotonic()
    with pytest.raises(BetaSourceError, match="unreachable for 1s while reading since=10"):
        read_rows(source, BetaRange(10, 20))
    assert time.monotonic() - began < 5


# --- a reset, replaced or truncated stream is never read past silently ---------------------
def test_replaced_stream_fails_naming_the_positions(sim: BetaSimulator) -> None:
    start = {"source": "fleetsim-beta", "sequence": 120, "stream": "an-older-stream"}
    with pytest.raises(SourceResetError) as info:
        reader(sim.url).latestOffset(start, ReadAllAvailable())
    message = str(info.value)
    assert "committed offset is sequence 120 of stream an-older-stream" in message
    assert f"sequences {PINGS - HISTORY + 1}..{PINGS}" in message
    assert "Nothing after sequence 120 was read or skipped" in message


def test_a_hole_fails_naming_the_missing_range(sim: BetaSimulator) -> None:
    start = {"source": "fleetsim-beta", "sequence": 100, "stream": stream_of(sim)}
    with pytest.raises(SourceResetError, match=f"no longer holds sequences 101..{PINGS - HISTORY}"):
        reader(sim.url).latestOffset(start, ReadAllAvailable())


def test_restart_from_earliest_reads_from_the_oldest_record_and_counts_the_loss(
    sim: BetaSimulator, tmp_path: Path
) -> None:
    source = reader(sim.url, tmp_path, on_source_reset="restart_from_earliest")
    start = {"source": "fleetsim-beta", "sequence": 100, "stream": stream_of(sim)}
    end = source.latestOffset(start, ReadAllAvailable())
    assert end["from"] == PINGS - HISTORY and end["sequence"] == PINGS
    rows = [seq for p in source.partitions(start, end) for seq, _ in read_rows(source, p)]
    assert rows == list(range(PINGS - HISTORY + 1, PINGS + 1))
    (loss,) = state_file(tmp_path)["losses"]
    assert loss["committed"] == 100 and loss["resumed_after"] == PINGS - HISTORY
    assert loss["lost_records"] == PINGS - HISTORY - 100
    # the next batch goes on normally from there
    assert source.latestOffset(end, ReadAllAvailable()) == end


def test_restart_from_earliest_after_a_replaced_stream(sim: BetaSimulator, tmp_path: Path) -> None:
    source = reader(sim.url, tmp_path, on_source_reset="restart_from_earliest")
    start = {"source": "fleetsim-beta", "sequence": 9000, "stream": "gone"}
    end = source.latestOffset(start, ReadMaxRows(50))
    assert end["from"] == PINGS - HISTORY
    assert end["sequence"] == PINGS - HISTORY + 50
    (loss,) = state_file(tmp_path)["losses"]
    assert loss["old_stream"] == "gone" and loss["lost_records"] is None


def test_a_partition_of_another_stream_is_not_read(sim: BetaSimulator) -> None:
    with pytest.raises(SourceResetError, match="now serves stream"):
        read_rows(reader(sim.url), BetaRange(PINGS - 10, PINGS, "another"))


def test_an_offset_without_a_stream_adopts_the_servers(sim: BetaSimulator) -> None:
    start = {"source": "fleetsim-beta", "sequence": PINGS}  # written before streams existed
    end = reader(sim.url).latestOffset(start, ReadAllAvailable())
    assert end["sequence"] == PINGS and end["stream"] == stream_of(sim)


# --- the state files and their merge --------------------------------------------------------
def test_merge_takes_the_worst_live_state_and_every_loss_once(tmp_path: Path) -> None:
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    dead_pid = int(dead.stdout)
    src = tmp_path / "fleetsim-beta"
    src.mkdir()
    loss = {"old_stream": "a", "new_stream": "b", "committed": 5, "resumed_after": 0}
    docs = {
        f"{os.getpid()}.json": {"source": "fleetsim-beta", "state": "degraded", "since": 50.0,
                                "reason": "down", "pid": os.getpid(), "losses": [loss],
                                "failures": 3},
        "1.json": {"source": "fleetsim-beta", "state": "ok", "pid": 1, "losses": [loss]},
        f"{dead_pid}.json": {"source": "fleetsim-beta", "state": "degraded", "since": 1.0,
                             "pid": dead_pid, "losses": []},
    }  # fmt: skip
    for name, doc in docs.items():
        (src / name).write_text(json.dumps(doc))
    merged = merge_states(tmp_path)["fleetsim-beta"]
    assert merged["state"] == "degraded" and merged["since"] == 50.0  # the dead one is ignored
    assert merged["failures"] == 3  # the failed tries of the live reader
    assert merged["losses"] == [loss]
    assert not (src / f"{dead_pid}.json").exists()  # nothing to keep of a dead reader


def test_source_reset_message_is_found_in_sparks_error_text() -> None:
    text = (
        "[STREAM_FAILED] Query [id = 1] terminated with exception: "
        "Traceback (most recent call last):\n  File ...\n"
        "spark_jobs.sources.source_state.SourceResetError: source fleetsim-beta was reset\n"
    )
    assert source_reset_message(text) == "source fleetsim-beta was reset"
    assert source_reset_message("Python worker failed to connect back") is None


def test_on_source_reset_is_checked() -> None:
    assert on_reset_policy({}) == "fail"
    with pytest.raises(ValueError, match="on_source_reset must be one of fail, restart"):
        on_reset_policy({"on_source_reset": "ignore"})


# --- alpha: a file behind the committed position is reported, never skipped silently -------
def alpha(directory: Path, state_dir: Path) -> AlphaStreamReader:
    return AlphaStreamReader(
        {"path": str(directory), "source_id": "fleetsim-alpha", "state_dir": str(state_dir)}
    )


def alpha_state(state_dir: Path) -> dict:
    return json.loads((state_dir / "fleetsim-alpha" / f"{os.getpid()}.json").read_text())


def drop(directory: Path, n: int, text: str = "x\n") -> str:
    name = f"pings-{n:012d}.csv"
    (directory / name).write_text(text)
    return name


def test_a_file_arriving_behind_the_committed_one_is_read_and_reported(tmp_path: Path) -> None:
    files, state = tmp_path / "drop", tmp_path / "state"
    files.mkdir()
    for n in (1, 2, 4, 5):
        drop(files, n)
    source = alpha(files, state)
    start = {"source": "fleetsim-alpha", "file": "pings-000000000004.csv"}
    end = source.latestOffset(start, ReadAllAvailable())
    assert end["file"] == "pings-000000000005.csv"
    assert not (state / "fleetsim-alpha").exists()  # nothing to report yet
    late = drop(files, 3)  # behind the committed file: name order would skip it
    drop(files, 6)
    end2 = source.latestOffset(end, ReadAllAvailable())
    assert end2["file"] == "pings-000000000006.csv"
    assert [f for p in source.partitions(end, end2) for f in p.files] == [  # type: ignore[attr-defined]
        late, "pings-000000000006.csv"]  # fmt: skip
    (event,) = alpha_state(state)["late_files"]  # read, and reported as late
    assert event["file"] == late and event["committed"] == "pings-000000000005.csv"
    assert event["read"] is True
    assert source.latestOffset(end2, ReadAllAvailable()) == end2
    assert len(alpha_state(state)["late_files"]) == 1  # reported once


def test_files_read_by_the_query_are_not_late(tmp_path: Path) -> None:
    files, state = tmp_path / "drop", tmp_path / "state"
    files.mkdir()
    drop(files, 1)
    source = alpha(files, state)
    offset = source.latestOffset({"source": "fleetsim-alpha", "file": ""}, ReadAllAvailable())
    for n in range(2, 6):
        drop(files, n)
        offset = source.latestOffset(offset, ReadMaxFiles(2))
    assert not (state / "fleetsim-alpha").exists()


def test_a_late_file_found_after_a_restart_is_read(tmp_path: Path) -> None:
    """An offset without memory (written before it existed): a file at or below its position
    that is newer than the committed file arrived late, and is read."""
    files, state = tmp_path / "drop", tmp_path / "state"
    files.mkdir()
    drop(files, 1)
    committed = drop(files, 5)
    time.sleep(1.2)
    late = drop(files, 2)  # arrived while no reader was looking
    source = alpha(files, state)
    start = {"source": "fleetsim-alpha", "file": committed}
    end = source.latestOffset(start, ReadAllAvailable())
    assert [f for p in source.partitions(start, end) for f in p.files] == [late]  # type: ignore[attr-defined]
    assert [(e["file"], e["read"]) for e in alpha_state(state)["late_files"]] == [(late, True)]


def test_a_committed_file_that_changes_or_disappears_is_reported(tmp_path: Path) -> None:
    files, state = tmp_path / "drop", tmp_path / "state"
    files.mkdir()
    committed = drop(files, 1)
    source = alpha(files, state)
    start = {"source": "fleetsim-alpha", "file": committed}
    source.latestOffset(start, ReadAllAvailable())
    (files / committed).write_text("x\nrewritten\n")
    source.latestOffset(start, ReadAllAvailable())
    (files / committed).unlink()
    source.latestOffset(start, ReadAllAvailable())
    changes = [e["change"] for e in alpha_state(state)["changed_files"]]
    assert changes == ["changed after it was read", "disappeared"]


# --- the spool: a planned batch never waits for the upstream ------------------------------
def test_a_spooled_batch_is_read_without_the_server(tmp_path: Path) -> None:
    sim = BetaSimulator(port=0, rate=100_000, max_pings=300, history=1000)
    sim.start()
    try:
        assert sim.wait_done(30)
        stream = stream_of(sim)
        source = reader(sim.url, spool_dir=str(tmp_path / "spool"), partition_size="100")
        start = {"source": "fleetsim-beta", "sequence": 20, "stream": stream}
        end = source.latestOffset(start, ReadMaxRows(250))
        assert end["sequence"] == 270
        served = sim.state.read(20, 250)
    finally:
        sim.stop()  # the server is gone: the planned batch reads the spool
    rows = [row for p in source.partitions(start, end) for row in read_rows(source, p)]
    assert [seq for seq, _ in rows] == list(range(21, 271))
    assert [json.loads(raw) for _, raw in rows] == [json.loads(raw) for raw in served]
    # another stage's reader finds the range spooled and fetches nothing
    other = reader(sim.url, spool_dir=str(tmp_path / "spool"))
    assert other._spool(20, 270, str(stream)) == (270, True)


def test_a_server_failing_mid_fetch_admits_what_was_fetched(tmp_path: Path) -> None:
    app = FastAPI()

    @app.get("/head")
    async def head() -> dict:
        return {"first": 1, "last": 50, "emitted": 50, "stream": "s"}

    @app.get("/pings")
    async def pings(since: int, limit: int) -> JSONResponse:
        if since >= 30:
            return JSONResponse({"error": "overloaded"}, status_code=503)
        upto = min(since + limit, 30)
        records = [{"sequence": n, "vin": "V"} for n in range(since + 1, upto + 1)]
        return JSONResponse(records, headers={"X-Stream-Id": "s"})

    server = ServerThread(app, port=0)
    server.start()
    try:
        url = f"http://127.0.0.1:{server.port}/pings"
        source = reader(url, tmp_path / "state", spool_dir=str(tmp_path / "spool"))
        start = {"source": "fleetsim-beta", "sequence": 10, "stream": "s"}
        end = source.latestOffset(start, ReadAllAvailable())
        assert end["sequence"] == 30  # the batch admits what is on hand, nothing beyond
        assert state_file(tmp_path / "state")["state"] == "degraded"
        assert "HTTP 503" in state_file(tmp_path / "state")["reason"]
        rows = [seq for p in source.partitions(start, end) for seq, _ in read_rows(source, p)]
        assert rows == list(range(11, 31))
        source.state._next_try = 0.0  # asked again: the head answers, the records do not
        assert source.latestOffset(end, ReadAllAvailable()) == end
        assert source.state.failures == 2  # still degraded, the backoff grows
    finally:
        server.stop()


def test_an_accepted_rewind_of_the_same_stream_never_serves_the_old_history_from_the_spool(
    tmp_path: Path,
) -> None:
    """The server still names stream ``s`` but went back to sequence 50 with other records
    (a log that lost its tail): the spool's records of the old history at those sequences
    must not be read as the new ones."""
    app = FastAPI()

    @app.get("/head")
    async def head() -> dict:
        return {"first": 1, "last": 50, "emitted": 50, "stream": "s"}

    @app.get("/pings")
    async def pings(since: int, limit: int) -> JSONResponse:
        upto = min(since + limit, 50)
        records = [{"sequence": n, "vin": "NEW"} for n in range(since + 1, upto + 1)]
        return JSONResponse(records, headers={"X-Stream-Id": "s"})

    spool_dir = tmp_path / "spool"
    old = [json.dumps({"sequence": n, "vin": "OLD"}) for n in range(1, 301)]
    Spool(spool_dir, "s").write(1, old)  # what a stage ahead fetched of the old history
    server = ServerThread(app, port=0)
    server.start()
    try:
        url = f"http://127.0.0.1:{server.port}/pings"
        source = reader(url, tmp_path / "state", spool_dir=str(spool_dir),
                        on_source_reset="restart_from_earliest")  # fmt: skip
        start = {"source": "fleetsim-beta", "sequence": 300, "stream": "s"}
        end = source.latestOffset(start, ReadAllAvailable())
        rows = [row for p in source.partitions(start, end) for row in read_rows(source, p)]
        assert [seq for seq, _ in rows] == list(range(1, 51))
        assert {json.loads(raw)["vin"] for _, raw in rows} == {"NEW"}
        assert end["generation"] == 1 and end["from"] == 0 and end["sequence"] == 50
        (loss,) = state_file(tmp_path / "state")["losses"]
        assert loss["committed"] == 300 and loss["generation"] == 1
        # the next batch stays in the new generation; a restarted query resumes in it too
        assert source.latestOffset(end, ReadAllAvailable()) == end
        again = reader(url, spool_dir=str(spool_dir), start_offset=json.dumps(end))
        assert again.initialOffset()["generation"] == 1
    finally:
        server.stop()


def test_a_deleted_log_is_a_reset_for_every_stage_even_one_behind(tmp_path: Path) -> None:
    """Two stages share the spool, one ahead of the other; fleetsim-beta's log is deleted and
    the server restarted on the same data directory. Both stages see the reset (fail), and
    after the loss is accepted neither reads a record of the old history as a new one."""
    data_dir, spool_dir = tmp_path / "beta", str(tmp_path / "spool")
    port = _free_port()
    first = BetaSimulator(port=port, rate=100_000, max_pings=300, history=1000, data_dir=data_dir)
    first.start()
    try:
        assert first.wait_done(30)
        url, old_stream = first.url, stream_of(first)
        ahead, behind = reader(url, spool_dir=spool_dir), reader(url, spool_dir=spool_dir)
        zero = {"source": "fleetsim-beta", "sequence": 0, "stream": old_stream}
        ahead_end = ahead.latestOffset(zero, ReadAllAvailable())
        behind_end = behind.latestOffset(zero, ReadMaxRows(100))
        assert (ahead_end["sequence"], behind_end["sequence"]) == (300, 100)
        old_raws = first.state.read(0, 300)
    finally:
        first.stop()
    shutil.rmtree(data_dir / "log")
    second = BetaSimulator(port=port, rate=100_000, max_pings=400, history=1000,
                           data_dir=data_dir)  # fmt: skip
    second.start()
    try:
        assert second.wait_done(30)
        assert stream_of(second) != old_stream
        for start in (ahead_end, behind_end):
            with pytest.raises(SourceResetError, match="another stream"):
                reader(url, spool_dir=spool_dir).latestOffset(start, ReadAllAvailable())
        accepting = reader(url, tmp_path / "state", spool_dir=spool_dir,
                           on_source_reset="restart_from_earliest")  # fmt: skip
        end = accepting.latestOffset(behind_end, ReadAllAvailable())
        rows = [r for p in accepting.partitions(behind_end, end) for r in read_rows(accepting, p)]
        assert [seq for seq, _ in rows] == list(range(1, 401))
        assert [raw for _, raw in rows] == [json.dumps(json.loads(r), separators=(",", ":"))
                                             for r in second.state.read(0, 400)]  # fmt: skip
        assert not {raw for _, raw in rows} & set(old_raws)
        (loss,) = state_file(tmp_path / "state")["losses"]
        assert loss["old_stream"] == old_stream and loss["committed"] == 100
    finally:
        second.stop()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_spool_chains_overlapping_files_and_prunes_old_ones(tmp_path: Path) -> None:
    spool = Spool(tmp_path, "s")
    spool.write(1, ["a1", "a2", "a3"])
    spool.write(3, ["b3", "b4", "b5"])
    spool.write(8, ["c8"])
    assert spool.covered_until(0) == 5 and spool.covered_until(7) == 8
    assert spool.read(1, 5) == [(2, "a2"), (3, "a3"), (4, "b4"), (5, "b5")]
    assert spool.read(4, 8) is None  # 6 and 7 are not held: the upstream replays them
    spool.prune(5, min_age=3600)
    assert spooled_ranges(tmp_path, "s") == [(1, 3), (3, 5), (8, 8)]  # too young to go
    spool.prune(3, min_age=0)
    assert spooled_ranges(tmp_path, "s") == [(3, 5), (8, 8)]


def test_a_record_that_is_no_json_object_is_read_for_quarantine_not_taken_for_a_gap() -> None:
    """A server answers its range in order: an entry that is not an object (or has no
    sequence) is the broken record at that position, read so the job quarantines it."""
    app = FastAPI()

    @app.get("/pings")
    async def pings(since: int, limit: int) -> JSONResponse:
        log: list[object] = [{"sequence": 1, "vin": "V"}, 42, ["x"], {"vin": "no sequence"},
                             {"sequence": 5, "vin": "V"}]  # fmt: skip
        return JSONResponse(log[since : since + limit], headers={"X-Stream-Id": "s"})

    server = ServerThread(app, port=0)
    server.start()
    try:
        url = f"http://127.0.0.1:{server.port}/pings"
        rows = list(fetch_range(url, 0, 5, 2.0, stream="s"))
        assert [seq for seq, _ in rows] == [1, 2, 3, 4, 5]
        assert [raw for _, raw in rows[1:4]] == ["42", '["x"]', '{"vin":"no sequence"}']
    finally:
        server.stop()
