"""Reading a Spark checkpoint's committed batch boundary (the driver's savepoint helpers)."""

from __future__ import annotations

import json
from pathlib import Path

from spark_jobs.runtime.savepointing import resume_point

ALPHA = {"source": "fleetsim-alpha", "file": "pings-000000000007.csv"}
BETA = {"source": "fleetsim-beta", "sequence": 700}


def write_batch(checkpoint: Path, batch: int, *offsets: dict, commit: bool = True) -> None:
    for d in ("offsets", "commits"):
        (checkpoint / d).mkdir(parents=True, exist_ok=True)
    meta = {"batchWatermarkMs": 0, "batchTimestampMs": 1, "conf": {}}
    lines = ["v1", json.dumps(meta), *(json.dumps(o) for o in offsets)]
    (checkpoint / "offsets" / str(batch)).write_text("\n".join(lines))
    if commit:
        (checkpoint / "commits" / str(batch)).write_text('v1\n{"nextBatchWatermarkMs":0}')


def test_resume_point_is_the_last_committed_batch_not_the_planned_one(tmp_path: Path) -> None:
    write_batch(tmp_path, 4, ALPHA, {**BETA, "sequence": 650})
    write_batch(tmp_path, 5, ALPHA, BETA)
    write_batch(tmp_path, 6, {**ALPHA, "file": "pings-000000000008.csv"}, BETA, commit=False)
    assert resume_point(tmp_path) == {
        "resumed_batch": 5, "sources": [{"end_offset": ALPHA}, {"end_offset": BETA}],
    }  # fmt: skip


def test_no_committed_batch_no_resume_point(tmp_path: Path) -> None:
    assert resume_point(tmp_path / "missing") == {}
    write_batch(tmp_path, 0, ALPHA, commit=False)
    assert resume_point(tmp_path) == {}
