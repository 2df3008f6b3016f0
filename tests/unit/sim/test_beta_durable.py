"""Tests of fleetsim-beta's durable log and stream id: real uvicorn servers on free loopback
ports, real HTTP, real files."""

from __future__ import annotations

import argparse
import json
import logging
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import requests

from streamops.cli import sim_cmds
from streamops.exceptions import SimulatorError
from streamops.settings import Settings
from streamops.sim.beta import STREAM_HEADER, BetaSimulator, PingHistory
from streamops.sim.durable_log import DurableLog, segment_name
from streamops.stack.local_stack import StackOptions, simulator_commands

FIXED_CLOCK = 1_700_000_000.0


def beta(data_dir: Path | None, max_pings: int, **kwargs: Any) -> BetaSimulator:
    """A beta on a free port with a fixed clock, not started."""
    options: dict[str, Any] = {"port": 0, "seed": 5, "rate": 20000, "history": 1000, **kwargs}
    return BetaSimulator(
        max_pings=max_pings, clock=lambda: FIXED_CLOCK, data_dir=data_dir, **options
    )


def run(sim: BetaSimulator) -> BetaSimulator:
    """Start ``sim`` and wait until it emitted its ``max_pings``."""
    sim.start()
    assert sim.wait_done(10)
    return sim


def get(sim: BetaSimulator, **params: object) -> requests.Response:
    return requests.get(sim.url, params=params, timeout=5)


def head(sim: BetaSimulator) -> dict[str, Any]:
    return requests.get(f"{sim.base_url}/head", timeout=5).json()


def segment_lines(data_dir: Path) -> dict[int, list[str]]:
    """The lines of each segment, by the segment's first sequence."""
    return {
        int(path.stem): path.read_text(encoding="utf-8").splitlines()
        for path in sorted((data_dir / "log").glob("*.jsonl"))
    }


def test_a_restart_keeps_the_stream_and_goes_on_at_the_next_sequence(tmp_path: Path) -> None:
    first = run(beta(tmp_path, 300, segment_records=128))
    try:
        before = get(first, since=0, limit=1000)
        stream = first.stream
        assert before.headers[STREAM_HEADER] == stream == head(first)["stream"]
        raws = first.state.read(0, 1000)
    finally:
        first.stop()
    identity = json.loads((tmp_path / "log" / "stream.json").read_text())
    assert identity["stream"] == stream and len(stream) == 32 and identity["created_at"]
    lines = segment_lines(tmp_path)
    assert list(lines) == [1, 129, 257] and [len(v) for v in lines.values()] == [128, 128, 44]
    assert [raw for segment in lines.values() for raw in segment] == raws  # byte for byte

    second = beta(tmp_path, 200, segment_records=128)
    try:
        assert second.stream == stream
        assert second.state.head() == {"stream": stream, "first": 1, "last": 300, "capacity": 1000,
                                       "emitted": 0}
        run(second)
        after = get(second, since=0, limit=1000)
        assert after.headers[STREAM_HEADER] == stream
        assert [r["sequence"] for r in after.json()] == list(range(1, 501))
        assert get(second, since=0, limit=300).text == before.text
        assert head(second) == {"stream": stream, "first": 1, "last": 500, "capacity": 1000,
                                "emitted": 200}
        assert second.emitted == 200
    finally:
        second.stop()
    assert json.loads((tmp_path / "log" / "stream.json").read_text()) == identity
    lines = segment_lines(tmp_path)
    assert list(lines) == [1, 129, 257, 385] and len(lines[257]) == 128 and len(lines[385]) == 116


def test_a_log_that_was_deleted_is_a_new_stream_whatever_else_survived(tmp_path: Path) -> None:
    first = run(beta(tmp_path, 300))
    old = first.stream
    first.stop()
    shutil.rmtree(tmp_path / "log")  # the records are gone; the data directory is not
    second = beta(tmp_path, 50)
    try:
        assert second.stream != old
        run(second)
        assert head(second) == {"stream": second.stream, "first": 1, "last": 50,
                                "capacity": 1000, "emitted": 50}
    finally:
        second.stop()


def test_an_identity_of_the_older_layout_moves_with_its_log_or_is_discarded(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    run(beta(tmp_path, 30)).stop()
    kept = tmp_path / "kept"
    (tmp_path / "log").rename(kept)
    (kept / "stream.json").rename(tmp_path / "stream.json")  # as older versions laid it out
    stream = json.loads((tmp_path / "stream.json").read_text())["stream"]
    (tmp_path / "log").mkdir()
    for segment in kept.glob("*.jsonl"):
        segment.rename(tmp_path / "log" / segment.name)
    again = beta(tmp_path, 0)
    assert again.stream == stream and not (tmp_path / "stream.json").exists()
    again.stop()
    # an identity of the older layout beside a log that is gone is not taken
    (tmp_path / "log" / "stream.json").rename(tmp_path / "stream.json")
    for segment in (tmp_path / "log").glob("*.jsonl"):
        segment.unlink()
    with caplog.at_level(logging.WARNING):
        fresh = beta(tmp_path, 0)
    fresh.stop()
    assert fresh.stream != stream and "whose log is gone" in caplog.text


def test_without_a_data_dir_every_simulator_is_a_new_stream(tmp_path: Path) -> None:
    sims = [beta(None, 5), beta(None, 5)]
    assert sims[0].stream != sims[1].stream
    assert all(len(s.stream) == 32 and int(s.stream, 16) >= 0 for s in sims)
    assert PingHistory(3).stream != PingHistory(3).stream
    assert PingHistory(3, stream="abc").head()["stream"] == "abc"
    assert list(tmp_path.iterdir()) == []


def test_head_pings_and_the_410_answer_name_the_stream() -> None:
    sim = run(beta(None, 300, history=100))
    try:
        assert head(sim) == {"stream": sim.stream, "first": 201, "last": 300, "capacity": 100,
                             "emitted": 300}
        ok = get(sim, since=250, limit=5)
        assert ok.status_code == 200 and ok.headers[STREAM_HEADER] == sim.stream
        assert get(sim, since=300).headers[STREAM_HEADER] == sim.stream  # an empty answer too
        gone = get(sim, since=0, limit=5)
        assert gone.status_code == 410 and gone.headers[STREAM_HEADER] == sim.stream
        body = gone.json()
        assert body["stream"] == sim.stream and body["oldest_available"] == 201
    finally:
        sim.stop()


@pytest.mark.parametrize(
    "tail",
    [b'{"sequence":301,"vin":"1B', b'{"sequence":301,"vi\n', b"\x00\x00\x00\x00"],
    ids=["no-newline", "unparsable", "zeros"],
)
def test_a_torn_last_line_is_cut_off_and_the_rest_kept(
    tmp_path: Path, tail: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    first = run(beta(tmp_path, 300))
    try:
        before = get(first, since=0, limit=300).text
    finally:
        first.stop()
    segment = tmp_path / "log" / segment_name(1)
    intact = segment.read_bytes()
    segment.write_bytes(intact + tail)

    with caplog.at_level(logging.WARNING, logger="streamops.sim.durable_log"):
        second = beta(tmp_path, 10)
    try:
        assert "sequence 301" in caplog.text and str(segment) in caplog.text
        assert segment.read_bytes() == intact
        assert second.state.head()["last"] == 300
        run(second)
        assert get(second, since=0, limit=300).text == before
        assert [r["sequence"] for r in get(second, since=295).json()] == list(range(296, 311))
    finally:
        second.stop()
    assert len(segment_lines(tmp_path)[1]) == 310


def _remove_middle_segment(log_dir: Path) -> None:
    (log_dir / segment_name(101)).unlink()


def _renumber_a_record(log_dir: Path) -> None:
    path = log_dir / segment_name(101)
    lines = path.read_text().splitlines(keepends=True)
    record = json.loads(lines[4])
    record["sequence"] = 999
    lines[4] = json.dumps(record, separators=(",", ":")) + "\n"
    path.write_text("".join(lines))


def _break_a_line(log_dir: Path) -> None:
    path = log_dir / segment_name(1)
    lines = path.read_text().splitlines(keepends=True)
    lines[2] = lines[2][:20] + "\n"
    path.write_text("".join(lines))


def _tear_an_old_segment(log_dir: Path) -> None:
    path = log_dir / segment_name(101)
    path.write_bytes(path.read_bytes() + b'{"sequence":2')


@pytest.mark.parametrize(
    ("damage", "expected"),
    [
        (_remove_middle_segment, r"000000000201\.jsonl starts at sequence 201 but .* ends at 100"),
        (_renumber_a_record, r"000000000101\.jsonl: line 5 holds sequence 999, expected.* 105"),
        (_break_a_line, r"000000000001\.jsonl: line 3 holds an unparsable line, expected.* 3$"),
        (_tear_an_old_segment, r"000000000101\.jsonl: line 101 \(sequence 201\) is cut short"),
    ],
    ids=["missing-segment", "wrong-sequence", "broken-line", "torn-old-segment"],
)
def test_records_out_of_place_are_an_error_naming_file_and_positions(
    tmp_path: Path, damage: Any, expected: str
) -> None:
    run(beta(tmp_path, 300, segment_records=100)).stop()
    damage(tmp_path / "log")
    for _ in range(2):  # a failed open releases the directory
        with pytest.raises(SimulatorError, match=expected):
            beta(tmp_path, 10, segment_records=100)


def test_retention_deletes_old_segments_but_keeps_the_history(tmp_path: Path) -> None:
    sim = run(beta(tmp_path, 1000, history=150, segment_records=100, malformed_every=7))
    try:
        newest = get(sim, since=850, limit=150).text
    finally:
        sim.stop()
    lines = segment_lines(tmp_path)
    assert list(lines) == [701, 801, 901] and all(len(v) == 100 for v in lines.values())
    restarted = beta(tmp_path, 0, history=150, segment_records=100)
    try:
        assert restarted.state.head() == {
            "stream": restarted.stream,
            "first": 851,
            "last": 1000,
            "capacity": 150,
            "emitted": 0,
        }
        run(restarted)
        assert get(restarted, since=850, limit=150).text == newest
        assert get(restarted, since=849).status_code == 410
    finally:
        restarted.stop()


def test_one_process_at_a_time_per_data_dir(tmp_path: Path) -> None:
    log = DurableLog(tmp_path, history=10)
    try:
        with pytest.raises(SimulatorError, match="in use"):
            beta(tmp_path, 1)
    finally:
        log.close()
    beta(tmp_path, 1).stop()  # never started: stop() releases the directory
    DurableLog(tmp_path, history=10).close()


def test_bad_durable_parameters_name_the_parameter(tmp_path: Path) -> None:
    with pytest.raises(SimulatorError, match="segment_records"):
        beta(tmp_path, 1, segment_records=0)
    with pytest.raises(SimulatorError, match="history"):
        beta(tmp_path, 1, history=0)
    with pytest.raises(SimulatorError, match="port"):
        beta(tmp_path, 1, port=-1)
    beta(tmp_path, 1).stop()  # none of the failures kept the directory


def _sim_beta_args(*extra: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    sim_cmds.register(parser.add_subparsers(dest="command", required=True))
    common = ["--port", "0", "--rate", "2000", "--max-pings", "50", "--vehicles", "5"]
    return parser.parse_args(["sim", "beta", *common, *extra])


def test_cli_data_dir_keeps_the_stream_across_runs(tmp_path: Path) -> None:
    assert _sim_beta_args().data_dir is None
    data_dir = tmp_path / "beta"
    args = _sim_beta_args("--data-dir", str(data_dir))
    assert args.data_dir == str(data_dir)
    settings = Settings.from_env(environ={}, state_root=tmp_path)
    assert args.handler(args, settings) == 0
    stream = json.loads((data_dir / "log" / "stream.json").read_text())["stream"]
    assert args.handler(args, settings) == 0
    assert json.loads((data_dir / "log" / "stream.json").read_text())["stream"] == stream
    records = [json.loads(line) for line in segment_lines(data_dir)[1]]
    assert [r["sequence"] for r in records] == list(range(1, 101))


def test_the_stack_runs_beta_with_its_data_dir(tmp_path: Path) -> None:
    settings = Settings.from_env(environ={}, state_root=tmp_path)
    commands = simulator_commands(settings, StackOptions(spec=tmp_path / "spec.yaml"))
    argv = commands["fleetsim-beta"]
    assert argv[argv.index("--data-dir") + 1] == str(settings.layout.beta_dir)
    assert settings.layout.beta_dir == settings.state_root / "data" / "beta"
    assert "--data-dir" not in commands["fleetsim-alpha"]


def test_cli_linger_serves_after_max_pings_until_sigterm(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamops.sim.beta", "--port", str(port), "--rate", "2000",
         "--max-pings", "20", "--linger", "--data-dir", str(tmp_path / "beta")],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        head: dict = {}
        while time.monotonic() < deadline and head.get("emitted") != 20:
            try:
                head = requests.get(f"http://127.0.0.1:{port}/head", timeout=2).json()
            except requests.RequestException:
                time.sleep(0.1)
        assert head.get("last") == 20
        time.sleep(1.0)
        assert proc.poll() is None  # still serving
        assert len(requests.get(f"http://127.0.0.1:{port}/pings?since=0", timeout=2).json()) == 20
        proc.terminate()
        assert proc.wait(20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
