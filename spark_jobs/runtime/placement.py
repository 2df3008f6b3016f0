"""Where a hot job's standby runs: apart from the running driver's worker, driver and executors.

A hot standby survives the loss of the running driver's node only if nothing of it runs
there. The master places drivers at random and executors on the workers with the most free
cores (the running driver's worker, whose own executors are elsewhere, is often one of them),
and a Spark application cannot tell it where. So the standby places itself:

- its driver, before its session: found on the running driver's worker (the master's
  ``/json/``), or started without a spare executor (a relaunched driver that found the job
  taken over stands by with the running driver's submission), it submits a fresh standby
  (:func:`streamops.cluster.submission.submit_hot_standby`) and exits 0; after
  :data:`MAX_MOVES` moves, or when no other worker has room for a driver, it stays and says
  so (``spark_jobs.runtime.hot_standby.move_reason``);
- its executors: a standby is submitted with one executor more than the job runs on, so that
  after the master spread them over the workers it can release those on the running driver's
  worker (and any surplus) and keep what the job needs apart from it
  (:func:`release_beside`). An executor killed by its application with its target lowered is
  not replaced by the master.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from pathlib import Path

from pyspark.sql import SparkSession

from spark_jobs.runtime.warmup import executor_count

# a hot driver asks the master where it runs (allow-listed in scripts/import_cycles.py)
from streamops.cluster.client import MasterClient
from streamops_contract.state.job_status import read_status
from streamops_contract.state.layout import StateLayout

log = logging.getLogger("spark_jobs.placement")

MAX_MOVES = 6  # the master places drivers at random: after this many moves a standby stays


def own_driver_id() -> str:
    """A cluster-mode driver runs in ``<worker dir>/<driver id>``."""
    return Path.cwd().name


@dataclass(frozen=True)
class Placement:
    """The workers of the running driver and of this standby's driver (worker ids)."""

    primary_worker: str | None
    own_worker: str | None

    @property
    def beside(self) -> bool:
        return bool(self.primary_worker) and self.primary_worker == self.own_worker


def placement(client: MasterClient, primary_driver: str, own_driver: str) -> Placement:
    drivers = {d.id: d.worker for d in client.active_drivers()}
    return Placement(drivers.get(primary_driver), drivers.get(own_driver))


def locate(client: MasterClient, layout: StateLayout, job: str) -> Placement:
    """Where the job's running driver (its status's) and this driver run."""
    primary = read_status(layout, job).driver_id
    return placement(client, str(primary), own_driver_id())


def room_elsewhere(client: MasterClient, worker_id: str | None, cores: int) -> bool:
    """Whether a live worker other than ``worker_id`` has ``cores`` free (for a driver)."""
    return any(
        w.state == "ALIVE" and w.id != worker_id and w.cores - w.coresused >= cores
        for w in client.workers()
    )


def kill_executors(spark: SparkSession, ids: list[str]) -> None:
    """Kill ``ids`` and lower this application's executor target by as many (standalone: the
    master replaces none of them)."""
    sc = spark.sparkContext
    jvm = sc._jvm  # type: ignore[attr-defined]
    sc._jsc.sc().killExecutors(jvm.PythonUtils.toSeq(ids))  # type: ignore[union-attr]


def wait_for_executors(
    spark: SparkSession, needed: int, granted: int, wait_s: float, spare_wait_s: float = 5.0
) -> int:
    """Wait until ``granted`` executors registered, or ``needed`` did ``spare_wait_s`` ago (a
    cluster without room for the spare), or ``wait_s`` passed; how many registered."""
    deadline = time.monotonic() + wait_s
    enough_at = None
    while (count := executor_count(spark)) < granted and time.monotonic() < deadline:
        if count >= needed:
            enough_at = enough_at or time.monotonic()
            if time.monotonic() - enough_at > spare_wait_s:
                break
        time.sleep(0.25)
    return count


def split_executors(
    by_worker: dict[str, list[str]], primary_worker: str | None, keep: int
) -> tuple[list[str], list[str], list[str]]:
    """Executors by worker → (kept, on ``primary_worker``, surplus): at most ``keep`` kept,
    taken one per worker in turn (spread, as the master placed them), none on the primary's
    worker."""
    beside = list(by_worker.get(primary_worker, [])) if primary_worker else []
    queues = [list(ids) for w, ids in sorted(by_worker.items()) if w != primary_worker]
    kept: list[str] = []
    while len(kept) < keep and any(queues):
        for queue in queues:
            if queue and len(kept) < keep:
                kept.append(queue.pop(0))
    surplus = [e for queue in queues for e in queue]
    return kept, beside, surplus


def release_beside(
    spark: SparkSession, client: MasterClient, primary_worker: str | None, keep: int
) -> dict[str, list[str]]:
    """Release this standby's executors on ``primary_worker``, and beyond ``keep`` any others
    (the spare it was submitted with); what was released and what is kept."""
    sc = spark.sparkContext
    app_id = sc.applicationId
    by_worker: dict[str, list[str]] = {}
    for worker in client.workers():
        if worker.state == "ALIVE" and worker.webuiaddress:
            state = client.worker_state(worker.webuiaddress)
            ids = [str(e["id"]) for e in state.get("executors") or [] if e.get("appid") == app_id]
            if ids:
                by_worker[worker.id] = sorted(ids, key=int)
    kept, beside, surplus = split_executors(by_worker, primary_worker, keep)
    if beside or surplus:
        kill_executors(spark, beside + surplus)
    log.info("hot standby: executors %s kept apart from the running driver's worker %s; "
             "released %s (on that worker) and %s (surplus)", kept or "none", primary_worker,
             beside or "none", surplus or "none")  # fmt: skip
    return {"kept": kept, "released_beside": beside, "released_surplus": surplus}

