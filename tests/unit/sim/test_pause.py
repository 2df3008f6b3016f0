"""Holding a simulator's emission for a drill's check point: everything emitted is published
(alpha's partial file) and journaled, nothing more is emitted until resumed, beta's server
answers meanwhile, and the held time is not made up in a burst."""

from __future__ import annotations

import time
from pathlib import Path

import requests

from streamops.sim import AlphaSimulator, BetaSimulator, read_journal


def test_a_paused_alpha_publishes_what_it_emitted_and_then_nothing(tmp_path: Path) -> None:
    sim = AlphaSimulator(tmp_path / "drop", rate=200, pings_per_file=1000, max_file_age=60,
                         journal=tmp_path / "a.jsonl")  # fmt: skip
    sim.start()
    try:
        time.sleep(0.5)
        sim.pause()
        emitted = sim.emitted
        assert emitted > 0
        files = sorted((tmp_path / "drop").glob("pings-*.csv"))
        lines = sum(len(f.read_text().splitlines()) for f in files)
        assert lines == emitted == len(read_journal(tmp_path / "a.jsonl"))
        time.sleep(1.0)
        assert sim.emitted == emitted
        sim.resume()
        time.sleep(0.5)
        sim.pause()  # (alpha counts what it published)
        assert emitted < sim.emitted < emitted + 2 * 200  # no burst for the held second
    finally:
        sim.stop()


def test_a_paused_beta_serves_and_emits_nothing(tmp_path: Path) -> None:
    sim = BetaSimulator(port=0, rate=200, journal=tmp_path / "b.jsonl")
    sim.start()
    try:
        time.sleep(0.5)
        sim.pause()
        emitted = sim.emitted
        time.sleep(1.0)
        head = requests.get(f"{sim.base_url}/head", timeout=5).json()
        assert head["last"] == emitted == sim.emitted > 0
        sim.resume()
        time.sleep(0.5)
        assert emitted < sim.emitted < emitted + 2 * 200
    finally:
        sim.stop()


def test_a_file_held_back_appears_after_the_next_one(tmp_path: Path) -> None:
    drop = tmp_path / "drop"
    sim = AlphaSimulator(drop, rate=400, pings_per_file=20, max_file_age=60,
                         journal=tmp_path / "a.jsonl")  # fmt: skip
    sim.start()
    try:
        sim.hold_back_next_file()
        time.sleep(0.5)
    finally:
        sim.stop()
    # the journal is written as each file is renamed into place: the order files appeared
    appeared = list(dict.fromkeys(r.file for r in read_journal(tmp_path / "a.jsonl")))
    assert len(appeared) >= 3 and appeared != sorted(appeared)  # one came late
    journal = read_journal(tmp_path / "a.jsonl")
    assert sorted(r.sequence for r in journal) == list(range(1, len(journal) + 1))
    on_disk = sum(len(p.read_text().splitlines()) for p in drop.glob("pings-*.csv"))
    assert on_disk == len(journal) == sim.emitted
