"""Reading a Spark checkpoint's committed batch boundary, and draining stages to one (the
driver's savepoint helpers)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from spark_jobs.runtime.savepointing import DrainTimeout, drain, resume_point

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


class FakeQuery:
    """A query whose status is scripted: each read runs the next step (what the stream
    thread did meanwhile) and returns whether a trigger is active."""

    def __init__(self, steps: list[Callable[[], bool]]) -> None:
        self.steps = steps

    @property
    def status(self) -> dict[str, Any]:
        step = self.steps.pop(0) if len(self.steps) > 1 else self.steps[0]
        return {"isTriggerActive": step()}


def test_drain_ends_at_the_commit_without_waiting_for_another_trigger(tmp_path: Path) -> None:
    stats, vehicles = tmp_path / "stats", tmp_path / "vehicles"
    write_batch(stats, 5, ALPHA, BETA, commit=False)  # admitted before the pause, in flight
    write_batch(vehicles, 7, ALPHA, BETA)

    def finish_batch_5() -> bool:
        write_batch(stats, 5, ALPHA, BETA)
        return False

    queries = {
        "stats": FakeQuery([lambda: True, lambda: True, finish_batch_5]),
        "vehicles": FakeQuery([lambda: False]),
    }
    # no idle trigger is ever reported: the commit with no trigger active is enough
    assert drain(queries, {"stats": stats, "vehicles": vehicles}, timeout=5) == {
        "stats": 5, "vehicles": 7,
    }  # fmt: skip


def test_drain_reads_the_status_before_the_checkpoint(tmp_path: Path) -> None:
    """A trigger that ends between the two reads: its batch is in the boundary returned."""
    write_batch(tmp_path, 5, ALPHA, BETA)

    def batch_6_ends() -> bool:
        write_batch(tmp_path, 6, {**ALPHA, "file": "pings-000000000008.csv"}, BETA)
        return False

    assert drain({"s": FakeQuery([batch_6_ends, lambda: False])}, {"s": tmp_path}, timeout=5) == {
        "s": 6
    }


def test_a_stage_that_stays_in_a_batch_fails_the_drain_naming_it(tmp_path: Path) -> None:
    write_batch(tmp_path / "stats", 5, ALPHA, commit=False)
    with pytest.raises(DrainTimeout, match="still in a batch: stats; trigger active: True"):
        drain({"stats": FakeQuery([lambda: True])}, {"stats": tmp_path / "stats"}, timeout=0.2)
