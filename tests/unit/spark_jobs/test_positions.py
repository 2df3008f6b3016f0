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
