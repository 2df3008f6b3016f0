"""The restart procedure's intent record: a retried step resumes, never repeats harm.

The cluster edge is the one fake operations port of :mod:`support.restart_fake`, whose
fakes record what they were asked: the nodes (stop, start), the job registry, driver and
submission (the jobs' savepoint with cancel and start run the steps of
:mod:`streamops.procedures.savepoint_restart` over the real control channel); the intent files are
real.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.agent_fake import make_settings
from support.restart_fake import JOB, FakeCluster, install
from support.step_crash import dies_when_recording
from support.upgrade_fake import V2

from streamops.cluster.releases import ReleaseStore
from streamops.exceptions import ClusterRestartFailed, UnknownRelease
from streamops.procedures import cluster_restart
from streamops.spec import load_spec
from streamops.world.operations import Operations


@pytest.fixture
def fake(tmp_path: Path) -> tuple[Operations, FakeCluster]:
    settings = make_settings(tmp_path)
    ReleaseStore(settings).switch("r1")
    cluster = install(settings)
    return cluster.ops, cluster


def test_unknown_release_is_refused_before_anything(fake: tuple[Operations, FakeCluster]) -> None:
    ops, cluster = fake
    with pytest.raises(UnknownRelease, match="'r7'"):
        cluster_restart.begin(ops, "r7")
    assert cluster_restart.load_intent(ops) is None and cluster.calls == []


def test_retried_steps_resume(fake: tuple[Operations, FakeCluster]) -> None:
    ops, cluster = fake
    intent = cluster_restart.begin(ops, "r2", path="full")
    assert (intent.release_from, intent.release_to, intent.workers) == ("r1", "r2", ["worker-1"])
    assert cluster_restart.begin(ops, "r2", path="full").savepoints == intent.savepoints  # resumed
    with pytest.raises(ClusterRestartFailed, match="restart to r2 is in progress"):
        cluster_restart.begin(ops, "r1")
    cluster_restart.savepoint_jobs(ops)
    cluster_restart.savepoint_jobs(ops)  # a retried task: nothing saved twice
    cluster_restart.restore_jobs(ops)
    cluster_restart.restore_jobs(ops)  # nothing submitted twice
    assert cluster_restart.verify_healthy(ops) == {JOB: "unknown"}
    name = intent.savepoints[JOB]
    assert cluster.calls == [f"savepoint {name} cancel=True", "ended driver-1",
                             f"submit v1 from {name} as driver-2",
                             "verify None"]  # any driver: the master was restarted


def test_a_savepoint_step_retried_after_a_crash_asks_once(
    fake: tuple[Operations, FakeCluster], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The task died after the driver answered, before the restart recorded the job saved:
    the retry resumes the job's own intent, it sends no second savepoint with cancel."""
    ops, cluster = fake
    cluster_restart.begin(ops, "r2", path="full")
    with dies_when_recording(monkeypatch, cluster_restart.STORE, "saved"):
        cluster_restart.savepoint_jobs(ops)
    cluster_restart.savepoint_jobs(ops)
    assert cluster.count("savepoint") == 1
    intent = cluster_restart.load_intent(ops)
    assert intent is not None and intent.saved == [JOB]


def test_rollback_before_the_stop_does_not_bounce_the_cluster(
    fake: tuple[Operations, FakeCluster], monkeypatch: pytest.MonkeyPatch
) -> None:
    ops, cluster = fake
    monkeypatch.setattr(cluster_restart, "_wait_healthy", lambda ops, intent, timeout: {})
    cluster_restart.begin(ops, "r2", path="full")
    cluster_restart.savepoint_jobs(ops)
    cluster_restart.rollback(ops, "stop failed")
    assert "stop cluster" not in cluster.calls and cluster.calls[-1].startswith("submit")
    intent = cluster_restart.load_intent(ops)
    assert intent is not None and intent.phase == "rolled-back" and intent.reason == "stop failed"
    assert ReleaseStore(ops.settings).active() == "r1"


def test_the_rollback_starts_the_specs_the_intent_holds(
    fake: tuple[Operations, FakeCluster], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The specs are recorded by value at ``begin``: a later submission of another version
    (what the job's last spec would say now) changes nothing the rollback starts."""
    ops, cluster = fake
    monkeypatch.setattr(cluster_restart, "_wait_healthy", lambda ops, intent, timeout: {})
    cluster_restart.begin(ops, "r2", path="full")
    cluster_restart.savepoint_jobs(ops)
    cluster.spec = load_spec(V2)
    cluster_restart.rollback(ops, "start failed")
    assert cluster.calls[-1].startswith("submit v1 from ")


def test_an_intent_of_the_older_layout_rolls_back_with_the_job_s_own_spec(
    fake: tuple[Operations, FakeCluster], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Written before the intent held the specs: the rollback takes the one the job's own
    restart intent holds by value."""
    ops, cluster = fake
    monkeypatch.setattr(cluster_restart, "_wait_healthy", lambda ops, intent, timeout: {})
    cluster_restart.begin(ops, "r2", path="full")
    cluster_restart.savepoint_jobs(ops)
    path = ops.layout.intent_file("cluster-restart")
    old = {k: v for k, v in json.loads(path.read_text()).items()
           if k not in ("specs", "done", "times", "at")}  # fmt: skip
    path.write_text(json.dumps(old))
    cluster.spec = load_spec(V2)
    cluster_restart.rollback(ops, "start failed")
    assert cluster.calls[-1].startswith("submit v1 from ")
