"""A hot standby (``standby: hot``) on the session's cluster, with a third worker for it.

fleet-pings with both simulators; its hot standby places itself apart from the running
driver's worker (its driver and the executors it keeps) and arms. Then, in sequence:

1. kill -9 of the node that hosts the running driver (worker, driver, executors) during a
   savepoint: the savepoint is kept whole or not at all, as its sender says; the standby
   takes the lease and its stages commit again; the dead driver, relaunched by the master,
   submits a standby in its place, armed apart again;
2. kill -9 of the standby's driver: the job runs on untouched and the standby is started
   again (it arms as in 1.);
2b. two drivers lost at once (the node of the primary and the node of its standby, as when
   a standby that could not move stood beside it): both relaunches find the lease's holder
   dead; exactly one takes the lease and its stages commit, the other stands by behind it
   (neither waits for a primary that no longer exists); the job's cancel at the end leaves
   no driver of it, relaunches included;
3. the oracle: the sinks equal the batch recomputation over every record both simulators
   emitted (0 lost, 0 duplicated, 0 different).
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from support.faults import driver_jvm_pid, kill_node_of, next_batches
from support.fleet import FleetRun
from support.integration import ClusterHandle, describe_job, wait_until

from streamops.exceptions import StreamopsError
from streamops.procedures.savepoint_taking import savepoint_job
from streamops.state.layout import read_json
from streamops_contract.state import lease

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


def committers(cluster: ClusterHandle, after: float) -> set[str]:
    """The drivers whose stages committed a batch after ``after`` (the status history)."""
    history = cluster.settings.layout.status_history(JOB).read_text().splitlines()
    return {str(rec.get("driver_id")) for rec in map(json.loads, history)
            if float(rec.get("last_batch_at") or 0) > after}  # fmt: skip


def both_drivers_lost(cluster: ClusterHandle, standby: dict[str, Any], dead: list[str],
                      describe: Callable[[], str]) -> None:  # fmt: skip
    """Kill the nodes of the running driver and of its standby at once (a worker is added
    back first, for the relaunches); exactly one relaunch runs the job after it."""
    registry = cluster.registry
    cluster.cluster.add_worker(dead.pop())  # the node lost in 1.: the relaunches' room
    primary = str(registry.view(JOB).driver_id)
    killed_at, name = kill_node_of(cluster, primary)
    dead.append(name)
    dead.append(kill_node_of(cluster, standby["driver_id"])[1])
    recovered = wait_until(lambda: next_batches(cluster, JOB, killed_at, STAGES), 240,
                           "every stage to commit after both drivers' nodes died",
                           interval=0.5, describe=describe)  # fmt: skip
    print(f"hot standby: both drivers lost: every stage committed again {recovered:.1f}s "
          "after the kill (a relaunch took the lease and started cold)")
    view = registry.view(JOB)
    held = lease.read_lease(cluster.settings.layout, JOB)
    assert held is not None and lease.alive(held), held
    assert held.holder == view.driver_id == view.status.driver_id, describe()
    assert held.holder not in (primary, standby["driver_id"]), held  # a relaunch
    assert drivers(cluster).get(held.holder), "the holder is not a driver the master runs"
    time.sleep(3)  # a second primary would have committed by now (a batch every second)
    # the dead drivers committed nothing after their kill: every batch since is the holder's
    assert committers(cluster, killed_at + 0.5) == {held.holder}, describe()
    others = {d.id for d in registry.drivers(JOB)} - {held.holder}
    print(f"hot standby: primary {held.holder} (epoch {held.epoch}); other drivers {others}")


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
    dead: list[str] = []  # the workers killed, started again at the end
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
            dead.append(killed_worker)
            recovered = wait_until(lambda: next_batches(cluster, JOB, killed_at, STAGES), 120,
                                   "every stage to commit after the node's death",
                                   interval=0.2, describe=describe)  # fmt: skip
            status = registry.view(JOB).status
            print(f"hot standby: every stage committed again {recovered:.1f}s after the kill")
            assert status.driver_id == standby["driver_id"], describe()
            assert status.took_over_from == primary
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

            # 2b. the primary's and the standby's nodes die at once: one relaunch runs the job
            both_drivers_lost(cluster, arm_apart(cluster, since=killed_at), dead, describe)

            # 3. nothing lost, nothing twice (the data ends here: no idle wait for a max)
            run.end_data()
            run.finish_and_check()
        assert not registry.view(JOB).is_live  # cancelled with its standby
        assert not armed(cluster)
        # the cancel killed every driver of the job: standby, relaunches (waiting ones too)
        assert registry.drivers(JOB) == [], registry.drivers(JOB)
        assert not cluster.registry.client.active_drivers()
    finally:
        for driver in cluster.registry.client.active_drivers():  # nothing left for the next
            cluster.registry.client.kill_submission(driver.id)   # tests, whatever happened
        for name in dead:
            cluster.cluster.add_worker(name)
        cluster.cluster.remove_worker(extra, graceful=False)  # two workers again
