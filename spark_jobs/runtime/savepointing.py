"""Savepoints inside the driver: drain every stage to a batch boundary, then copy.

Draining never interrupts a batch: the job's sources stop admitting new data while the
job's pause file exists (their ``latestOffset`` returns the start offset), so each query
finishes the batch in flight and then admits nothing. A stage is drained as soon as no
trigger is active and its checkpoint's last planned batch (``offsets/``) is committed
(``commits/``): the drain does not wait for the next trigger. A no-data batch (the watermark
moved by the last batch) may still start before the queries stop; the savepoint leaves it out
(its cut is the committed batch), and the next version runs it again with its first batch:
the sinks are keyed, so windows it emitted are written again with the same values.
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from streamops_contract.state.checkpoint_cut import last_batch

log = logging.getLogger("spark_jobs.savepointing")


class DrainTimeout(RuntimeError):
    """A stage did not reach a batch boundary in time."""


def committed_offsets(checkpoint: Path, batch_id: int | None) -> list[dict[str, Any]]:
    """End offsets of each source of batch ``batch_id``.

    ``offsets/<id>`` holds a version line, the batch metadata, then one offset per source.
    """
    if batch_id is None:
        return []
    lines = (checkpoint / "offsets" / str(batch_id)).read_text(encoding="utf-8").splitlines()
    out = []
    for line in lines[2:]:
        line = line.strip()
        out.append(json.loads(line) if line and line != "-" else {})
    return out


def resume_point(checkpoint: Path) -> dict[str, Any]:
    """A checkpoint's last committed batch (``resumed_batch``) and the end offsets its sources
    had read (``sources``, as in the status); empty without a committed batch."""
    batch = last_batch(checkpoint / "commits")
    if batch is None:
        return {}
    offsets = committed_offsets(checkpoint, batch)
    return {"resumed_batch": batch, "sources": [{"end_offset": o} for o in offsets]}


def stage_boundary(checkpoint: Path) -> tuple[int | None, int | None]:
    return last_batch(checkpoint / "offsets"), last_batch(checkpoint / "commits")


def drain(
    queries: dict[str, Any], checkpoints: dict[str, Path], timeout: float
) -> dict[str, int | None]:
    """Wait until every stage sits at a committed batch boundary; return its batch ids.

    Call it right after the pause file was created. The queries' status is read before their
    checkpoints: a trigger that ends between the two reads shows its commit, and one that
    starts after the first read began after the pause and admits no data.
    """
    deadline = time.monotonic() + timeout
    while True:
        idle = all(not q.status.get("isTriggerActive") for q in queries.values())
        seen = {name: stage_boundary(checkpoints[name]) for name in queries}
        if idle and all(planned == done for planned, done in seen.values()):
            return {name: done for name, (_, done) in seen.items()}
        if time.monotonic() > deadline:
            busy = [n for n, (p, d) in seen.items() if p != d]
            raise DrainTimeout(
                f"stages did not reach a batch boundary within {timeout:.0f}s "
                f"(still in a batch: {', '.join(busy) or 'none'}; trigger active: {not idle})"
            )
        time.sleep(0.05)


def state_metadata(spark: SparkSession, checkpoint: Path) -> list[dict[str, Any]] | None:
    """Spark's ``state-metadata`` rows of a stage (operators, state stores); None if stateless."""
    if not (checkpoint / "state").is_dir():
        return None
    rows = spark.read.format("state-metadata").load(str(checkpoint)).collect()
    return [json.loads(json.dumps(r.asDict(recursive=True), default=str)) for r in rows]


def stage_entry(
    spark: SparkSession, checkpoint: Path, batch_id: int | None, stateful: bool,
    descriptor: dict[str, Any] | None,
) -> dict[str, Any]:  # fmt: skip
    """What the manifest records of one stage at its drained boundary."""
    return {
        "batch_id": batch_id,
        "sources": committed_offsets(checkpoint, batch_id),
        "stateful": stateful,
        "state": {"operators": state_metadata(spark, checkpoint)} if stateful else None,
        "descriptor": descriptor,
    }
