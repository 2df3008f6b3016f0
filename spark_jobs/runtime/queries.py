"""Starting a stage's streaming query, the one way the supervision and the warm standby's gate
start one: named for its stage, on its checkpoint, fenced by the job's lease."""

from __future__ import annotations

import logging
import shutil
import weakref
from pathlib import Path
from typing import Any

from spark_jobs.runtime.protocols import RunningJob, Stage
from spark_jobs.runtime.status import StatusBoard, StatusListener
from streamops_contract.spec import ProcessingGuarantee
from streamops_contract.state.checkpoint_cut import last_batch

log = logging.getLogger("spark_jobs.runtime")
_LISTENED: weakref.WeakSet[StatusBoard] = weakref.WeakSet()


def listen(job: RunningJob) -> None:
    """Have the job's queries' progress reach its status board (once per job)."""
    if job.board not in _LISTENED:
        job.spark.streams.addListener(StatusListener(job.board))
        _LISTENED.add(job.board)


def start_query(job: RunningJob, stage: Stage, how: str = "started", *, fresh: bool = False) -> Any:
    """Start ``stage``'s query (``fresh``: its first start in this run)."""
    if fresh and job.spec.processing_guarantee is ProcessingGuarantee.NONE:
        shutil.rmtree(job.checkpoint_for(stage.name), ignore_errors=True)
    query = (
        stage.frame.writeStream.queryName(stage.name)
        .option("checkpointLocation", job.checkpoint_for(stage.name))
        .outputMode(stage.output_mode)
        .trigger(processingTime=f"{job.spec.trigger_seconds} seconds")
        .foreachBatch(job.fence.fenced(stage.sink))
        .start()
    )
    log.info("job %s v%s: stage %s %s", job.job, job.spec.version, stage.name, how)
    return query


def has_batches(job: RunningJob, stage: str) -> bool:
    return last_batch(Path(job.checkpoint_for(stage)) / "offsets") is not None
