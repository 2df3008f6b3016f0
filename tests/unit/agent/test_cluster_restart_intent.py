"""The restart procedure's intent record: a retried step resumes, never repeats harm.

The cluster edge is replaced by hand-written fakes that record what they were asked: the
agents (stop, start), and the job registry, driver and submission of
:mod:`support.restart_fake` (the jobs' savepoint with cancel and start run the steps of
:mod:`streamops.procedures.savepoint_restart` over the real control channel); the intent files are
real.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from support.agent_fake import make_settings
from support.restart_fake import JOB, FakeCluster, install

from streamops.cluster.releases import ReleaseStore
from streamops.exceptions import ClusterRestartFailed, UnknownRelease
from streamops.procedures import cluster_restart, restore
from streamops.settings import Settings


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> tuple[Settings, FakeCluster]:
    settings = make_settings(tmp_path)
    ReleaseStore(settings).switch("r1")
    cluster = install(monkeypatch, settings)
    monkeypatch.setattr(cluster_restart, "JobRegistry", lambda settings: cluster)
    monkeypatch.setattr(cluster_restart, "running_workers", lambda agents: ["worker-1"])
    monkeypatch.setattr(cluster_restart, "current_spec", lambda settings, job: cluster.spec)
    monkeypatch.setattr(cluster_restart, "get_savepoint",
                        lambda layout, name, job=None: type("M", (), {"stages": {"s": 1}}))
    monkeypatch.setattr(cluster_restart, "start_from_savepoint", restore.start_from_savepoint)
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
    assert cluster_restart.verify_healthy(settings) == {JOB: "unknown"}
    name = intent.savepoints[JOB]
    assert cluster.calls == [f"savepoint {name} cancel=True", "ended driver-1",
                             f"submit v1 from {name} as driver-2",
                             "verify None"]  # any driver: the master was restarted


def test_a_savepoint_step_retried_after_a_crash_asks_once(
    fake: tuple[Settings, FakeCluster], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The task died after the driver answered, before the restart recorded the job saved:
    the retry resumes the job's own intent, it sends no second savepoint with cancel."""
    settings, cluster = fake
    cluster_restart.begin(settings, "r2")
    save = cluster_restart._save

    def died_before_saved(settings, intent, phase, **detail):  # type: ignore[no-untyped-def]
        if phase == "saved":
            raise KeyboardInterrupt("the worker died")
        save(settings, intent, phase, **detail)

    monkeypatch.setattr(cluster_restart, "_save", died_before_saved)
    with pytest.raises(KeyboardInterrupt):
        cluster_restart.savepoint_jobs(settings)
    monkeypatch.setattr(cluster_restart, "_save", save)
    cluster_restart.savepoint_jobs(settings)
    assert cluster.count("savepoint") == 1
    intent = cluster_restart.load_intent(settings)
    assert intent is not None and intent.saved == [JOB]


def test_rollback_before_the_stop_does_not_bounce_the_cluster(
    fake: tuple[Settings, FakeCluster], monkeypatch: pytest.MonkeyPatch
) -> None:
    settings, cluster = fake
    monkeypatch.setattr(cluster_restart, "_wait_healthy", lambda settings, intent, timeout: {})
    cluster_restart.begin(settings, "r2")
    cluster_restart.savepoint_jobs(settings)
    cluster_restart.rollback(settings, "stop failed")
    assert "stop cluster" not in cluster.calls and cluster.calls[-1].startswith("submit")
    intent = cluster_restart.load_intent(settings)
    assert intent is not None and intent.phase == "rolled-back" and intent.reason == "stop failed"
    assert ReleaseStore(settings).active() == "r1"
