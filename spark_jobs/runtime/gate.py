"""The warm standby's gate: a standby's queries started early and held before they read.

:meth:`WarmGate.arm` starts every stage's query now, held at the gate (``gate_file``): the
queries' sources start up (a Python process each) and then wait for the file, and Spark reads
a query's checkpoint only after its sources are up, so the savepoint may still be restored
into the checkpoints. The supervision opens the gate (:meth:`WarmGate.open`) once the lease
is held. Arming writes nothing but the empty checkpoint of a new stage.
"""

from __future__ import annotations

import logging
import shutil
import time
from pathlib import Path
from typing import Any

from spark_jobs.runtime.errors import JobFailed, short_error
from spark_jobs.runtime.protocols import RunningJob
from spark_jobs.runtime.queries import has_batches, listen, start_query
from spark_jobs.sources.positions import gate_waiting_dir

log = logging.getLogger("spark_jobs.runtime")


class WarmGate:
    def __init__(self, job: RunningJob, gate_file: Path) -> None:
        self.job = job
        self.gate_file = gate_file
        self.armed: list[Any] | None = None  # the queries held at the gate
        self._armed_empty: set[str] = set()  # armed on a checkpoint without a batch

    def arm(self) -> None:
        """Start every stage's query now, held at the gate (see the module)."""
        job = self.job
        if not job.stages:
            raise ValueError(f"job {job.job} declared no stages")
        self.gate_file.unlink(missing_ok=True)  # a relaunched standby waits for its lease too
        shutil.rmtree(gate_waiting_dir(self.gate_file), ignore_errors=True)
        listen(job)
        self._armed_empty = {s.name for s in job.stages if not has_batches(job, s.name)}
        self.armed = [start_query(job, stage, "armed", fresh=True) for stage in job.stages]

    def wait_armed(self, timeout: float = 60.0) -> float:
        """Wait until every armed query is held at the gate, its sources up; the seconds it
        took. A query that died meanwhile fails the standby (the old version runs on)."""
        if self.armed is None:
            raise ValueError(f"job {self.job.job}: nothing armed")
        started = time.monotonic()
        waiting = gate_waiting_dir(self.gate_file)
        while True:
            dead = [q for q in self.armed if not q.isActive]
            if dead:
                error = dead[0].exception()
                raise JobFailed(f"armed stage {dead[0].name} ended before the gate opened: "
                                f"{short_error(error) if error else 'stopped'}")  # fmt: skip
            held = len(list(waiting.iterdir())) if waiting.is_dir() else 0
            if held >= len(self.armed):
                return round(time.monotonic() - started, 2)
            if time.monotonic() - started > timeout:
                log.warning("job %s: %d of %d armed stage(s) held at the gate after %.0fs; the "
                            "others start up when it opens", self.job.job, held,
                            len(self.armed), timeout)  # fmt: skip
                return round(time.monotonic() - started, 2)
            time.sleep(0.1)

    def open(self) -> list[Any]:
        """Let the armed queries read their checkpoints. Spark remembers whether a checkpoint
        had a batch when its query started: a stage armed on an empty checkpoint that has
        batches now (the old version committed its first batch after the standby armed) fails
        at once, and is started again."""
        job, armed = self.job, list(self.armed or [])
        stale = {s.name for s in job.stages
                 if s.name in self._armed_empty and has_batches(job, s.name)}  # fmt: skip
        self.gate_file.parent.mkdir(parents=True, exist_ok=True)
        self.gate_file.touch()
        shutil.rmtree(gate_waiting_dir(self.gate_file), ignore_errors=True)
        log.info("job %s v%s: gate opened, %d armed stage(s) read their checkpoints", job.job,
                 job.spec.version, len(armed) - len(stale))  # fmt: skip
        queries = list(armed)
        for i, stage in enumerate(job.stages):
            if stage.name in stale:
                try:
                    queries[i].awaitTermination(60)
                except Exception as exc:  # expected: Spark refuses the changed checkpoint
                    log.info("job %s: armed stage %s ended as expected: %s", job.job,
                             stage.name, short_error(exc)[:200])  # fmt: skip
                if queries[i].isActive:
                    queries[i].stop()
                queries[i] = start_query(
                    job, stage, "started again (its checkpoint was empty when armed)"
                )
        return queries
