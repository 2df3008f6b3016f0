"""The restart procedure's intent record: a retried step resumes, never repeats harm.

The cluster edge (agents, job registry, savepoint and submit calls) is replaced by
hand-written fakes that record what they were asked; the intent file is real.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from support.agent_fake import make_settings

from streamops import cluster_restart
from streamops.exceptions import ClusterRestartFailed, UnknownRelease
from streamops.releases import ReleaseStore
from streamops.settings import Settings


@dataclass
class FakeView:
    name: str
    is_live: bool


@dataclass
class FakeCluster:
    live: set[str] = field(default_factory=lambda: {"fleet-a"})
    calls: list[str] = field(default_factory=list)

    def list(self) -> list[FakeView]:
        return [FakeView(n, True) for n in sorted(self.live)]

    def view(self, job: str) -> FakeView:
        return FakeView(job, job in self.live)

    def cancel(self, job: str) -> None:
        self.calls.append(f"cancel {job}")
        self.live.discard(job)


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> tuple[Settings, FakeCluster]:
    settings = make_settings(tmp_path)
    ReleaseStore(settings).switch("r1")
    cluster = FakeCluster()

    def savepoint_job(settings: Settings, job: str, name: str, *, cancel: bool) -> None:
        cluster.calls.append(f"savepoint {job} {name} cancel={cancel}")
        cluster.live.discard(job)

    def start_from_savepoint(spec: Any, settings: Settings, name: str, stages: Any,
                             wait_healthy: Any) -> str:  # fmt: skip
        cluster.calls.append(f"restore {spec} from {name}")
        cluster.live.add(spec)
        return "driver-1"

    monkeypatch.setattr(cluster_restart, "JobRegistry", lambda settings: cluster)
    monkeypatch.setattr(cluster_restart, "running_workers", lambda agents: ["worker-1"])
    monkeypatch.setattr(cluster_restart, "savepoint_job", savepoint_job)
    monkeypatch.setattr(cluster_restart, "start_from_savepoint", start_from_savepoint)
    monkeypatch.setattr(cluster_restart, "current_spec", lambda settings, job: job)
    monkeypatch.setattr(cluster_restart, "get_savepoint",
                        lambda layout, name, job=None: type("M", (), {"stages": {"s": 1}}))
    monkeypatch.setattr(cluster_restart, "_stop_all",
                        lambda agents: cluster.calls.append("stop cluster"))
    monkeypatch.setattr(cluster_restart, "_start_all",
                        lambda settings, agents, workers: cluster.calls.append("start cluster"))
    return settings, cluster


def test_unknown_release_is_refused_before_anything(fake: tuple[Settings, FakeCluster]) -> None:
    settings, cluster = fake
    with pytest.raises(UnknownRelease, match="'r7'"):
        cluster_restart.begin(settings, "r7")
    assert cluster_restart.load_intent(settings) is None and cluster.calls == []


def test_retried_steps_resume(fake: tuple[Settings, FakeCluster]) -> None:
    settings, cluster = fake
    intent = cluster_restart.begin(settings, "r2")
    assert (intent.release_from, intent.release_to, intent.workers) == ("r1", "r2", ["worker-1"])
    assert cluster_restart.begin(settings, "r2").savepoints == intent.savepoints  # resumed
    with pytest.raises(ClusterRestartFailed, match="restart to r2 is in progress"):
        cluster_restart.begin(settings, "r1")
    cluster_restart.savepoint_jobs(settings)
    cluster_restart.savepoint_jobs(settings)  # a retried task: nothing saved twice
    cluster_restart.restore_jobs(settings)
    cluster_restart.restore_jobs(settings)  # nothing submitted twice
    name = intent.savepoints["fleet-a"]
    assert cluster.calls == [f"savepoint fleet-a {name} cancel=True",
                             f"restore fleet-a from {name}"]


def test_rollback_before_the_stop_does_not_bounce_the_cluster(
    fake: tuple[Settings, FakeCluster], monkeypatch: pytest.MonkeyPatch
) -> None:
    settings, cluster = fake
    monkeypatch.setattr(cluster_restart, "_wait_healthy", lambda settings, intent, timeout: {})
    cluster_restart.begin(settings, "r2")
    cluster_restart.savepoint_jobs(settings)
    cluster_restart.rollback(settings, "stop failed")
    assert "stop cluster" not in cluster.calls and cluster.calls[-1].startswith("restore")
    intent = cluster_restart.load_intent(settings)
    assert intent is not None and intent.phase == "rolled-back" and intent.reason == "stop failed"
    assert ReleaseStore(settings).active() == "r1"
