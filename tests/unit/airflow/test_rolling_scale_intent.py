"""The ``rolling_scale`` DAG's tasks record the scale's intent, owned by the DAG run, and the
worker count health expects once the master lists it; a failed step is kept in the intent.
The ``cluster_restart`` DAG's run owns its intent too. The world is a fake operations port
(:mod:`support.restart_fake`, two workers running, fake agents); the tasks are the DAG's own."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from support.dag_runs import dag_tasks
from support.restart_fake import FakeCluster, as_dag_task, install

from streamops.exceptions import JobError
from streamops.procedures import scale
from streamops.settings import Settings
from streamops.state.cluster_size import desired_workers

RUN = SimpleNamespace(dag_id="rolling_scale", run_id="manual__1")
OWNER = "airflow:rolling_scale/manual__1"


def _tasks(name: str = "rolling_scale") -> dict[str, Any]:
    return {task_id: t.python_callable for task_id, t in dag_tasks(name).items()}


@pytest.fixture
def cluster(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> FakeCluster:
    cluster = install(Settings.from_env({}, state_root=str(tmp_path / "state")))
    cluster.workers = ["worker-1", "worker-2"]
    return as_dag_task(monkeypatch, cluster, RUN)


@pytest.fixture
def settings(cluster: FakeCluster) -> Settings:
    return cluster.settings


def test_a_run_records_its_intent_and_the_workers_health_expects(
    cluster: FakeCluster, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(scale, "batches_continue", lambda s, m, t: {})
    tasks = _tasks()
    assert tasks["change_workers"]({"action": "workers", "workers": 3}, {}) == 3
    intent = scale.load_intent(settings)
    assert intent is not None and intent.owner == OWNER and intent.workers == 3
    assert intent.started == ["worker-3"] and cluster.calls == ["start worker-3"]
    assert not intent.finished and desired_workers(settings.layout) is None
    tasks["confirm_in_master"](3)
    assert cluster.calls[-1] == "master lists 3 ALIVE"
    assert desired_workers(settings.layout) == 3
    tasks["verify_batches_continue"](params={"verify_timeout": 30})
    tasks["rebalance"]()
    intent = scale.load_intent(settings)
    assert intent is not None and intent.finished
    assert intent.done == list(scale.SCALE_STEPS)
    tasks["rebalance"]()  # a retry after it finished changes nothing


def test_a_failed_step_is_kept_in_the_intent(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    def stalled(*_: Any) -> dict[str, Any]:
        raise JobError("fleet-pings committed no new batch within 30s of the scale")

    monkeypatch.setattr(scale, "batches_continue", stalled)
    tasks = _tasks()
    tasks["change_workers"]({"action": "workers", "workers": 3}, {})
    tasks["confirm_in_master"](3)
    with pytest.raises(JobError):
        tasks["verify_batches_continue"](params={"verify_timeout": 30})
    intent = scale.load_intent(settings)
    assert intent is not None and not intent.finished
    assert intent.reason and "step verify_batches_continue failed" in intent.reason


def test_the_cluster_restart_run_owns_its_intent(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    from streamops.procedures import cluster_restart

    asked: dict[str, Any] = {}

    def begin(s: Settings, release: str, owner: str = "cli", path: str = "auto", *,
              now: bool = False) -> cluster_restart.RestartIntent:  # fmt: skip
        asked.update(release=release, owner=owner, path=path, now=now)
        return cluster_restart.RestartIntent("r1", release, ["worker-1"], {}, owner=owner,
                                             path="full")  # fmt: skip

    monkeypatch.setattr(cluster_restart, "begin", begin)
    monkeypatch.setattr("airflow.sdk.get_current_context",
                        lambda: {"ti": SimpleNamespace(dag_id="cluster_restart",
                                                       run_id="manual__2")})  # fmt: skip
    asked_for = {"release": "r2", "path": "auto"}
    assert _tasks("cluster_restart")["begin"](asked_for) == "full"
    assert asked == {"release": "r2", "owner": "airflow:cluster_restart/manual__2",
                     "path": "auto", "now": False}
