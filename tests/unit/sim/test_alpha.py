"""Tests of fleetsim-alpha: real files in a temporary directory, a real journal."""

from __future__ import annotations

import argparse
import os
import re
import threading
import time
from pathlib import Path

import pytest

from streamops.cli import sim_cmds
from streamops.exceptions import SimulatorError
from streamops.settings import Settings
from streamops.sim.alpha import ALPHA_MALFORMED_KINDS, FILE_PATTERN, TEMP_PATTERN, AlphaSimulator
from streamops.sim.fleet import Ping, is_valid_vin
from streamops.sim.journal import read_journal, valid_pings

FIXED_CLOCK = 1_700_000_000.0


def final_files(directory: Path) -> list[Path]:
    return sorted(p for p in directory.iterdir() if FILE_PATTERN.match(p.name))


def lines_of(directory: Path) -> list[str]:
    return [line for f in final_files(directory) for line in f.read_text().splitlines()]


def run_to_end(sim: AlphaSimulator, timeout: float = 10.0) -> None:
    sim.start()
    assert sim.wait_done(timeout)
    sim.stop()


def test_files_hold_contiguous_valid_pings_and_match_the_journal(tmp_path: Path) -> None:
    out, journal = tmp_path / "alpha", tmp_path / "journal.jsonl"
    sim = AlphaSimulator(out, rate=5000, max_pings=1050, pings_per_file=100, journal=journal)
    run_to_end(sim)
    files = final_files(out)
    assert [f.name for f in files] == [f"pings-{n:012d}.csv" for n in range(1, 12)]
    assert sim.emitted == 1050 and sim.files_written == 11 and sim.last_sequence == 1050
    pings = [Ping.from_csv(line) for line in lines_of(out)]
    assert [p.sequence for p in pings] == list(range(1, 1051))
    assert all(is_valid_vin(p.vin) and p.vin.startswith("1A") for p in pings)
    times = [p.time for p in pings]
    assert times == sorted(times)
    records = read_journal(journal)
    assert [r.raw for r in records] == lines_of(out)
    assert all(r.source == "alpha" and not r.malformed for r in records)
    for f in files:
        assert [r.raw for r in records if r.file == f.name] == f.read_text().splitlines()
    assert valid_pings(records) == pings


def test_same_seed_and_clock_give_identical_files(tmp_path: Path) -> None:
    for name in ("a", "b"):
        sim = AlphaSimulator(
            tmp_path / name, seed=9, rate=5000, max_pings=300, clock=lambda: FIXED_CLOCK
        )
        run_to_end(sim)
    assert lines_of(tmp_path / "a") == lines_of(tmp_path / "b")
    assert {Ping.from_csv(line).time for line in lines_of(tmp_path / "a")} == {FIXED_CLOCK}


def test_no_partial_file_is_ever_visible_under_a_final_name(tmp_path: Path) -> None:
    out = tmp_path / "alpha"
    out.mkdir()
    sim = AlphaSimulator(out, rate=20000, max_pings=20000, pings_per_file=50)
    first_seen: dict[str, bytes] = {}
    names: set[str] = set()

    def watch() -> None:
        while not sim.done:
            for name in os.listdir(out):
                names.add(name)
                if FILE_PATTERN.match(name) and name not in first_seen:
                    first_seen[name] = (out / name).read_bytes()

    watcher = threading.Thread(target=watch)
    watcher.start()
    run_to_end(sim, timeout=15)
    watcher.join()
    assert len(first_seen) > 10
    for name, content in first_seen.items():
        assert content == (out / name).read_bytes()
        assert content.endswith(b"\n") and len(content.splitlines()) == 50
    assert all(FILE_PATTERN.match(n) or TEMP_PATTERN.match(n) for n in names)
    assert not [n for n in os.listdir(out) if n.startswith(".")]


def test_restart_continues_file_numbers_and_sequences(tmp_path: Path) -> None:
    out, journal = tmp_path / "alpha", tmp_path / "journal.jsonl"
    run_to_end(AlphaSimulator(out, rate=5000, max_pings=250, journal=journal))
    (out / ".pings-000000000004.csv.tmp").write_text("1,half a line")  # left by a crash
    again = AlphaSimulator(out, rate=5000, max_pings=120, journal=journal)
    run_to_end(again)
    names = [f.name for f in final_files(out)]
    assert names == [f"pings-{n:012d}.csv" for n in range(1, 6)]
    sequences = [int(line.split(",")[0]) for line in lines_of(out)]
    assert sequences == list(range(1, 371))
    assert again.emitted == 120 and again.last_sequence == 370
    assert [r.sequence for r in read_journal(journal)] == sequences
    assert not (out / ".pings-000000000004.csv.tmp").exists()


def test_max_file_age_closes_files_at_low_rates_and_stop_flushes(tmp_path: Path) -> None:
    out = tmp_path / "alpha"
    sim = AlphaSimulator(out, rate=200, pings_per_file=1000, max_file_age=0.2)
    sim.start()
    deadline = time.monotonic() + 5
    while len(final_files(out)) < 3 and time.monotonic() < deadline:
        time.sleep(0.02)
    sim.stop()
    assert sim.done and len(final_files(out)) >= 3
    assert all(len(f.read_text().splitlines()) < 1000 for f in final_files(out))
    sequences = [int(line.split(",")[0]) for line in lines_of(out)]
    assert sequences == list(range(1, sim.emitted + 1))


def test_malformed_lines_keep_their_sequence_and_are_journaled(tmp_path: Path) -> None:
    out, journal = tmp_path / "alpha", tmp_path / "journal.jsonl"
    run_to_end(AlphaSimulator(out, rate=5000, max_pings=100, malformed_every=10, journal=journal))
    lines = lines_of(out)
    assert [int(line.split(",")[0]) for line in lines] == list(range(1, 101))
    records = read_journal(journal)
    bad = [r for r in records if r.malformed]
    assert [r.sequence for r in bad] == list(range(10, 101, 10))
    assert [r.reason for r in bad] == [ALPHA_MALFORMED_KINDS[i % 4] for i in range(10)]
    for r in bad:
        assert r.ping is None and r.raw == lines[r.sequence - 1]
        with pytest.raises(ValueError):
            Ping.from_csv(r.raw)
    assert len(valid_pings(records)) == 90


def test_clean_run_matches_the_malformed_run_except_the_malformed_lines(tmp_path: Path) -> None:
    clock = lambda: FIXED_CLOCK  # noqa: E731
    run_to_end(AlphaSimulator(tmp_path / "a", rate=5000, max_pings=60, clock=clock))
    run_to_end(
        AlphaSimulator(tmp_path / "b", rate=5000, max_pings=60, malformed_every=7, clock=clock)
    )
    pairs = zip(lines_of(tmp_path / "a"), lines_of(tmp_path / "b"), strict=True)
    assert all(a == b for n, (a, b) in enumerate(pairs, 1) if n % 7)


@pytest.mark.parametrize(
    ("kwargs", "param"),
    [
        ({"rate": 0}, "rate"),
        ({"rate": float("inf")}, "rate"),
        ({"vehicles": 0}, "vehicles"),
        ({"pings_per_file": 0}, "pings_per_file"),
        ({"max_file_age": 0}, "max_file_age"),
        ({"malformed_every": -1}, "malformed_every"),
        ({"max_pings": -5}, "max_pings"),
        ({"vin_prefix": "1O"}, "vin_prefix"),
    ],
)
def test_bad_parameters_name_the_parameter(tmp_path: Path, kwargs: dict, param: str) -> None:
    with pytest.raises(SimulatorError, match=param):
        AlphaSimulator(tmp_path, **kwargs)


def test_directory_that_is_a_file_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "file"
    target.write_text("x")
    with pytest.raises(SimulatorError, match="directory"):
        AlphaSimulator(target)


def test_cli_sim_alpha_writes_to_the_state_root_by_default(tmp_path: Path) -> None:
    parser = argparse.ArgumentParser()
    sim_cmds.register(parser.add_subparsers(dest="command", required=True))
    journal = tmp_path / "j.jsonl"
    args = parser.parse_args(
        [
            "sim",
            "alpha",
            "--rate",
            "2000",
            "--max-pings",
            "150",
            "--malformed-every",
            "50",
            "--journal",
            str(journal),
            "--pings-per-file",
            "100",
            "--progress-every",
            "0.05",
        ]
    )
    settings = Settings.from_env(environ={}, state_root=tmp_path / "state")
    assert args.handler(args, settings) == 0
    out = settings.layout.alpha_dir
    names = [f.name for f in final_files(out)]
    assert names == ["pings-000000000001.csv", "pings-000000000002.csv"]
    assert len(read_journal(journal)) == 150
    assert re.match(r"^1,1A", lines_of(out)[0])
