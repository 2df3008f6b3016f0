"""The cluster restart's warm path: the release switched under the running daemons, each job
handed over to a standby that starts on it; no daemon stopped.

The world is the upgrade's fake operations port (:mod:`support.upgrade_fake`: registry,
savepoints over the real control channel, submitter with a warm standby), with nodes that
switch the real release link; a driver reports the release that was active when it was
submitted, as a real one does from its classpath.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from support.agent_fake import make_settings
from support.nodes_fake import WorkerAgents
from support.step_crash import dies_when_recording
from support.upgrade_fake import JOB, V1, FakeCluster, FakeRegistry

from streamops.cluster.releases import ReleaseStore
from streamops.exceptions import ClusterRestartFailed
from streamops.procedures import cluster_handover, cluster_restart, upgrade_steps
from streamops.procedures.cluster_restart_intent import choose_path
from streamops.settings import Settings
from streamops.spec import JobSpec, load_spec
from streamops.state.job_status import JobStatus
from streamops.world.operations import Operations


@dataclass
class ReleasedCluster(FakeCluster):
    """Each driver runs the release active when it was submitted (``stale``: the old one)."""

    releases: dict[str, str] = field(default_factory=lambda: {"driver-old": "r1"})
    stale: bool = False

    def submit(self, spec: JobSpec, driver: str, what: str) -> str:
        self.releases[driver] = "r1" if self.stale else str(ReleaseStore(self.settings).active())
        return super().submit(spec, driver, what)


@dataclass
class Registry(FakeRegistry):
    cluster: ReleasedCluster

    def view(self, job: str) -> Any:
        view = super().view(job)
        driver = self.cluster.job_driver
        return SimpleNamespace(**{**vars(view), "name": job, "status": JobStatus(
            driver_id=driver, classpath_release=self.cluster.releases.get(driver))})

    def list(self) -> list[Any]:
        return [self.view(JOB)] if self.cluster.job_driver in self.cluster.live else []


@dataclass
class Nodes(WorkerAgents):
    settings: Settings
    calls: list[str]
    running: list[str] = field(default_factory=lambda: ["worker-1", "worker-2"])

    def stop_all(self) -> None:
        self.calls.append("stop cluster")

    def start_all(self, workers: list[str]) -> None:
        self.calls.append("start cluster")

    def switch_release(self, release: str) -> None:
        ReleaseStore(self.settings).switch(release)
        self.calls.append(f"switch {release}")


@pytest.fixture
def world(tmp_path: Path) -> tuple[Operations, ReleasedCluster]:
    settings = make_settings(tmp_path)
    ReleaseStore(settings).switch("r1")
    cluster = ReleasedCluster(settings, load_spec(V1))
    ops = dataclasses.replace(cluster.ops, registry=Registry(cluster),
                              nodes=Nodes(settings, cluster.calls))  # fmt: skip
    return ops, cluster


def test_a_running_job_is_handed_over_onto_the_new_release_and_no_daemon_stops(
    world: tuple[Operations, ReleasedCluster],
) -> None:
    ops, cluster = world
    intent = cluster_restart.restart(ops, "r2")
    assert (intent.path, intent.phase, intent.restored) == ("warm", "done", [JOB])
    assert intent.drivers == {JOB: "driver-old"} and intent.releases_before == {JOB: "r1"}
    name = intent.savepoints[JOB]
    assert cluster.calls == ["switch r2", "standby v1 as driver-standby",
                             f"release driver-standby from {name}"]
    assert cluster.releases["driver-standby"] == "r2" and "driver-old" not in cluster.live
    assert ReleaseStore(ops.settings).active() == "r2"
    with pytest.raises(ClusterRestartFailed, match="no cluster restart in progress"):
        cluster_handover.hand_over_jobs(ops)  # done: a retried task finds nothing to do


def test_a_new_driver_on_the_old_release_rolls_the_restart_back(
    world: tuple[Operations, ReleasedCluster],
) -> None:
    """The handed-over driver reports r1 after the switch to r2: the restart fails loudly,
    switches back and hands the job over again, so it runs a driver of the old release
    started after the switch back."""
    ops, cluster = world
    cluster.stale = True
    with pytest.raises(ClusterRestartFailed, match="reports release r1, not r2"):
        cluster_restart.restart(ops, "r2")
    intent = cluster_restart.load_intent(ops)
    assert intent is not None and (intent.path, intent.phase) == ("warm", "rolled-back")
    assert ReleaseStore(ops.settings).active() == "r1"
    assert [c for c in cluster.calls if c.startswith("switch")] == ["switch r2", "switch r1"]
    assert cluster.count("standby") == 2 and "stop cluster" not in cluster.calls
    again = upgrade_steps.load_intent(ops, JOB)
    assert again is not None and again.phase == "done"
    assert again.savepoint == f"{intent.savepoints[JOB]}-back"


def test_the_path_is_chosen_once_and_kept(world: tuple[Operations, ReleasedCluster]) -> None:
    ops, cluster = world
    assert choose_path("auto", []) == "full" and choose_path("auto", [JOB]) == "warm"
    assert choose_path("full", [JOB]) == "full"
    with pytest.raises(ClusterRestartFailed, match="unknown restart path 'fast'"):
        cluster_restart.begin(ops, "r2", path="fast")
    assert cluster_restart.load_intent(ops) is None
    intent = cluster_restart.begin(ops, "r2")
    assert intent.path == "warm"
    assert cluster_restart.begin(ops, "r2", path="full").path == "warm"  # resumed as begun
    with pytest.raises(ClusterRestartFailed, match="warm path: its jobs are handed over"):
        cluster_restart.savepoint_jobs(ops)
    with pytest.raises(ClusterRestartFailed, match="not active yet"):
        cluster_handover.hand_over_jobs(ops)
    assert cluster.calls == []  # nothing stopped, nothing submitted


def test_a_handover_step_retried_after_the_handover_finished_does_not_hand_over_again(
    world: tuple[Operations, ReleasedCluster], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The task died after the job's upgrade was done, before the restart recorded the job
    handed over: the retry finds the finished handover of its savepoint and moves on."""
    ops, cluster = world
    cluster_restart.begin(ops, "r2")
    cluster_restart.switch_release(ops)
    with dies_when_recording(monkeypatch, cluster_restart.STORE, "handed-over"):
        cluster_handover.hand_over_jobs(ops)
    assert cluster_handover.hand_over_jobs(ops) == [JOB]
    assert cluster.count("standby") == 1
    assert cluster_handover.verify_released(ops) == {JOB: "r2"}


def test_a_standby_that_fails_mid_restart_leaves_the_job_untouched_and_a_rerun_finishes(
    world: tuple[Operations, ReleasedCluster],
) -> None:
    """The standby does not come up after the switch: the restart fails loudly, switches
    back, and the job runs on its first driver (never stopped). The operator runs it again
    once the cluster has room: it hands over and finishes on the new release."""
    ops, cluster = world
    cluster.standby_error = "no worker has the cores for the standby's driver"
    with pytest.raises(ClusterRestartFailed, match="cores for the standby"):
        cluster_restart.restart(ops, "r2")
    intent = cluster_restart.load_intent(ops)
    assert intent is not None and intent.phase == "rolled-back"
    assert ReleaseStore(ops.settings).active() == "r1"
    assert cluster.job_driver == "driver-old" and "driver-old" in cluster.live
    assert cluster.count("release") == 0 and not cluster.savepoints  # nothing was stopped
    cluster.standby_error = None
    again = cluster_restart.restart(ops, "r2")
    assert (again.path, again.phase, again.restored) == ("warm", "done", [JOB])
    assert cluster.releases[cluster.job_driver] == "r2"
