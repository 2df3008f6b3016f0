"""A hot standby (``standby: hot``) on the session's cluster, with a third worker for it.

fleet-pings with both simulators; its hot standby places itself apart from the running
driver's worker (its driver and the executors it keeps) and arms. Then, in sequence:

1. kill -9 of the node that hosts the running driver (worker, driver, executors) during a
   savepoint: the savepoint is kept whole or not at all, as its sender says; the standby
   takes the lease and its stages commit again; the dead driver, relaunched by the master,
   submits a standby in its place, armed apart again;
2. kill -9 of the standby's driver: the job runs on untouched and the standby is started
   again (it arms as in 1.);
3. the oracle: the sinks equal the batch recomputation over every record both simulators
   emitted (0 lost, 0 duplicated, 0 different).
"""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from support.faults import driver_jvm_pid, kill_node_of, next_batches
from support.fleet import FleetRun
from support.integration import ClusterHandle, describe_job, wait_until

from streamops.exceptions import StreamopsError
from streamops.procedures.savepoint_taking import savepoint_job
from streamops.state.layout import read_json

pytestmark = pytest.mark.integration
JOB = "fleet-hot"
STAGES = {"vehicles", "vehicle-stats-1m"}


def drivers(cluster: ClusterHandle) -> dict[str, str]:
    """Live drivers of the cluster: id → worker id."""
    return {d.id: d.worker for d in cluster.registry.client.active_drivers()
            if d.state == "RUNNING"}  # fmt: skip


def armed(cluster: ClusterHandle, since: float = 0.0) -> dict[str, Any] | None:
    """The hot standby's file once its driver is live and armed after ``since`` (a driver
    relaunched by the master gets a new id; one restarted by its worker keeps its id)."""
    doc = read_json(cluster.settings.layout.hot_standby_file(JOB)) or {}
    driver = doc.get("driver_id")
    fresh = float(doc.get("armed_at") or 0) > since
    return doc if driver and fresh and driver in drivers(cluster) else None


def app_executors_by_worker(cluster: ClusterHandle, app_id: str) -> dict[str, set[str]]:
    """The executors of ``app_id`` that each live worker runs (its own ``/json/``)."""
    client = cluster.registry.client
    found: dict[str, set[str]] = {}
    for worker in client.workers():
        if worker.state == "ALIVE":
            listed = client.worker_state(worker.webuiaddress).get("executors") or []
            found[worker.id] = {str(e["id"]) for e in listed if e.get("appid") == app_id}
    return found


def arm_apart(cluster: ClusterHandle, since: float = 0.0) -> dict[str, Any]:
    """Wait until the standby is armed, and check that it runs apart from the running
    driver's worker, its driver and the executors it kept: a standby placed there submits
    another in its place, and a standby releases its executors there."""
    registry = cluster.registry
    doc = wait_until(lambda: armed(cluster, since), 300, "the hot standby to be armed apart",
                     describe=lambda: describe_job(registry.view(JOB)))  # fmt: skip
    assert isinstance(doc, dict)
    placed = drivers(cluster)
    primary_worker = placed[str(registry.view(JOB).driver_id)]
    assert placed[doc["driver_id"]] != primary_worker, (doc, placed)
    assert doc["kept"] and not doc["beside_primary"], doc
    on_primary = app_executors_by_worker(cluster, doc["app_id"]).get(primary_worker, set())
    assert not on_primary & set(doc["kept"]), (doc, on_primary)
    return doc


class Saving:
    """A savepoint (no cancel) taken in a thread, for a driver that dies during it."""

    def __init__(self, cluster: ClusterHandle, name: str) -> None:
        self.cluster, self.name = cluster, name
        self.outcome: list[object] = []
        self.thread = threading.Thread(target=self._take, daemon=True)
        self.thread.start()

    def _take(self) -> None:
        try:
            self.outcome.append(savepoint_job(self.cluster.settings, JOB, self.name, timeout=60))
        except StreamopsError as exc:
            self.outcome.append(exc)

    def check_whole_or_nothing(self) -> None:
        """The sender says what was kept; that is what exists, and no later driver acts on
        the request (a savepoint appearing after the error would contradict it)."""
        self.thread.join(60)
        assert len(self.outcome) == 1, self.outcome
        path = self.cluster.settings.layout.savepoint(self.name)
        if isinstance(self.outcome[0], StreamopsError):
            message = str(self.outcome[0])
            print(f"hot standby: savepoint during the kill: {message}")
            kept = path.is_dir()
            if "not acted on" in message:  # the new driver answered before the sender noticed
                assert not kept, message
            else:
                assert f"the driver died during savepoint {self.name}" in message, message
                assert ("was published before" in message) == kept, message
            time.sleep(5)  # the new driver polls its requests every 0.2 s
            assert path.is_dir() == kept, "a savepoint appeared after its sender gave up"
        else:
            print("hot standby: the savepoint was taken before the kill")
            assert path.is_dir()


def test_hot_standby_takes_over(spark_cluster: ClusterHandle, tmp_path: Path) -> None:
    cluster, registry = spark_cluster, spark_cluster.registry
    extra = cluster.cluster.add_worker()  # the standby's cores: 2 + 1 of 3 x 3
    describe = lambda: describe_job(registry.view(JOB))  # noqa: E731
    killed_worker = None
    try:
        with FleetRun(cluster, tmp_path, job=JOB, rate=30, max_pings=1_000_000) as run:
            run.submit(run.spec(standby="hot"))
            standby = arm_apart(cluster)
            primary = str(registry.view(JOB).driver_id)
            assert registry.view(JOB).standby == f"{standby['driver_id']} armed"

            # 1. the running driver's node dies during a savepoint: the standby takes over
            saving = Saving(cluster, "hot-sp-1")
            time.sleep(0.3)  # the driver picks requests up every 0.2 s, then drains a batch
            killed_at, killed_worker = kill_node_of(cluster, primary)
            recovered = wait_until(lambda: next_batches(cluster, JOB, killed_at, STAGES), 120,
                                   "every stage to commit after the node's death",
                                   interval=0.2, describe=describe)  # fmt: skip
            status = registry.view(JOB).status
            print(f"hot standby: every stage committed again {recovered:.1f}s after the kill")
            assert status["driver_id"] == standby["driver_id"], describe()
            assert status["took_over_from"] == primary
            saving.check_whole_or_nothing()
            rearmed = arm_apart(cluster, since=killed_at)  # the relaunched driver, or the
            # standby it submitted in its place (it has no spare executor)
            print(f"hot standby: a new standby armed {time.time() - killed_at:.1f}s after it")

            # 2. the standby itself dies: the job runs on; its worker starts it again
            killed_at = time.time()
            os.kill(driver_jvm_pid(rearmed["driver_id"]), signal.SIGKILL)
            wait_until(lambda: next_batches(cluster, JOB, killed_at, STAGES), 60,
                       "every stage to commit after the standby's death", describe=describe)
            wait_until(lambda: registry.view(JOB).standby, 120,
                       "the killed standby to be started again", describe=describe)
            assert registry.view(JOB).driver_id == standby["driver_id"], describe()

            # 3. nothing lost, nothing twice (the data ends here: no idle wait for a max)
            run.end_data()
            run.finish_and_check()
        assert not registry.view(JOB).is_live  # cancelled with its standby
        assert not armed(cluster)
    finally:
        for driver in cluster.registry.client.active_drivers():  # nothing left for the next
            cluster.registry.client.kill_submission(driver.id)   # tests, whatever happened
        if killed_worker is not None:
            cluster.cluster.add_worker(killed_worker)
        cluster.cluster.remove_worker(extra, graceful=False)  # two workers again
