"""Start positions of a source: inline option first, else the file read when the query starts."""

from __future__ import annotations

import json
from pathlib import Path

from spark_jobs.sources.positions import recorded_start

ALPHA = {"source": "fleetsim-alpha", "file": "pings-000000000007.csv"}


def test_inline_start_offset_wins(tmp_path: Path) -> None:
    go = tmp_path / "go.json"
    go.write_text(json.dumps({"positions": {"fleetsim-alpha": {"file": "other"}}}))
    options = {"start_offset": json.dumps(ALPHA), "start_offsets_file": str(go)}
    assert recorded_start(options, "fleetsim-alpha") == ALPHA


def test_file_is_read_when_asked(tmp_path: Path) -> None:
    go = tmp_path / "go.json"
    options = {"start_offsets_file": str(go)}
    assert recorded_start(options, "fleetsim-alpha") is None  # not released yet: no file
    go.write_text(json.dumps({"savepoint": "sp", "positions": {"fleetsim-alpha": ALPHA}}))
    assert recorded_start(options, "fleetsim-alpha") == ALPHA
    assert recorded_start(options, "fleetsim-beta") is None  # a source the savepoint lacks


def test_no_options_no_position() -> None:
    assert recorded_start({}, "fleetsim-alpha") is None


def test_a_source_waits_at_the_gate_and_leaves_its_mark(tmp_path: Path) -> None:
    import os
    import threading

    from spark_jobs.sources.positions import gate_waiting_dir, wait_for_gate

    gate = tmp_path / "token.open"
    done = threading.Event()
    waiter = threading.Thread(
        target=lambda: (wait_for_gate({"gate_file": str(gate)}, poll=0.01), done.set())
    )
    waiter.start()
    marks = gate_waiting_dir(gate)
    for _ in range(200):
        if marks.is_dir() and any(marks.iterdir()):
            break
        done.wait(0.01)
    assert [p.name for p in marks.iterdir()] == [str(os.getpid())]
    assert not done.wait(0.1), "passed a closed gate"
    gate.touch()
    waiter.join(5)
    assert done.is_set()
    wait_for_gate({"gate_file": str(gate)})  # open: at once
    wait_for_gate({})  # no gate: at once
