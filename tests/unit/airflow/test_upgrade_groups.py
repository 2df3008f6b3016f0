"""The upgrade DAG's tasks are thin: each runs (or polls) one step of
:mod:`streamops.procedures.upgrade_steps`, for the DAG run that owns the intent. Run on the fake
cluster, a run whose every task is retried repeats nothing, and starts the version it planned; its
rollback acts only when the run stopped the old version."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from airflow.sdk.exceptions import AirflowSkipException
from support.dag_runs import dag_tasks
from support.upgrade_fake import JOB, V2, FakeCluster, install

from streamops.procedures import upgrade_steps
from streamops.spec import load_spec
from streamops_airflow import upgrade_groups as groups
from streamops_airflow.exceptions import ProcedureFailed
from streamops_airflow.procedure_tasks import StepSensor

RUN = SimpleNamespace(dag_id="savepoint_and_upgrade", run_id="manual__1")
OWNER = "airflow:savepoint_and_upgrade/manual__1"


@pytest.fixture
def cluster(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> FakeCluster:
    cluster = install(tmp_path)
    xcoms: dict[str, Any] = {}
    ti = SimpleNamespace(**vars(RUN), xcoms=xcoms,
                         xcom_pull=lambda task_ids, key=None: xcoms.get(key))  # fmt: skip
    monkeypatch.setattr(groups, "get_current_context", lambda: {"ti": ti})
    monkeypatch.setattr("airflow.sdk.get_current_context", lambda: {"ti": ti})
    monkeypatch.setattr("streamops_airflow.hooks.ops_operations", lambda *_: cluster.ops)
    return cluster


def validated(path: Path, standby: str = "cold", savepoint: str | None = None) -> dict[str, Any]:
    """What ``validate`` hands to ``plan``: the spec by value (its one read of the file)."""
    return {"job": JOB, "spec_path": str(path), "spec": load_spec(path).model_dump(mode="json"),
            "savepoint": savepoint, "allow_state_drop": False, "standby": standby}  # fmt: skip


def sensor() -> StepSensor:
    return StepSensor(task_id="wait_result", step=upgrade_steps.savepoint_answered, job=JOB)


def test_every_upgrade_task_runs_a_library_step(
    cluster: FakeCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    called: list[tuple[str, str, str]] = []
    intent = SimpleNamespace(plan="p", job=JOB, savepoint="s", from_version="1", to_version="2",
                             standby=None, request="r", new_driver="d")  # fmt: skip
    results = {"savepoint_answered": True, "rollback": upgrade_steps.Rollback(True, "back"),
               "abort_standby": True}  # fmt: skip
    for name in ("plan", "start_standby", "request_savepoint", "savepoint_answered",
                 "start_new_version", "verify", "finish", "rollback", "abort_standby"):
        def step(settings: Any, job: str, owner: str, *_: Any, _name: str = name,
                 **__: Any) -> Any:  # fmt: skip
            called.append((_name, job, owner))
            return results.get(_name, intent)

        monkeypatch.setattr(upgrade_steps, name, step)
    ctx = {"job": JOB}
    groups.plan.function(validated(V2))
    groups.start_standby.function(ctx)
    groups.request.function(ctx)
    assert sensor().poke({}) is True  # type: ignore[arg-type]
    groups.start_new_version.function(ctx)
    groups.done.function(ctx)
    with pytest.raises(ProcedureFailed, match="back"):
        groups.rollback.function(ctx)
    groups.get_current_context()["ti"].xcoms["job"] = JOB
    groups.abort_standby.function("plan")
    assert called == [(name, JOB, OWNER) for name in (
        "plan", "start_standby", "request_savepoint", "savepoint_answered", "start_new_version",
        "verify", "finish", "rollback", "abort_standby")]  # fmt: skip


def test_the_upgrade_dag_is_made_of_these_tasks() -> None:
    tasks = dag_tasks("savepoint_and_upgrade")
    for task_id, fn in (("plan", groups.plan), ("start_standby", groups.start_standby),
                        ("savepoint_with_cancel.request", groups.request),
                        ("start_new_version", groups.start_new_version),
                        ("verify.done", groups.done), ("verify.rollback", groups.rollback),
                        ("abort_standby", groups.abort_standby)):  # fmt: skip
        assert tasks[task_id].python_callable is fn.function, task_id
    wait = tasks["savepoint_with_cancel.wait_result"]
    assert isinstance(wait, StepSensor) and wait.step is upgrade_steps.savepoint_answered


@pytest.mark.parametrize("standby", ["warm", "cold"])
def test_a_run_whose_every_task_is_retried_repeats_nothing_and_starts_the_planned_version(
    cluster: FakeCluster, tmp_path: Path, standby: str
) -> None:
    path = tmp_path / "v2.yaml"
    path.write_text(V2.read_text())
    given = validated(path, standby)  # validate's output: the file's one read
    for _ in range(2):  # every task twice: its retry
        ctx = groups.plan.function(given)
        path.write_text(V2.read_text().replace('version: "2"', 'version: "9"'))  # edited
    for _ in range(2):
        groups.start_standby.function(ctx)
    for _ in range(2):
        groups.request.function(ctx)
    assert sensor().poke({}) and sensor().poke({})  # type: ignore[arg-type]
    drivers = {groups.start_new_version.function(ctx) for _ in range(2)}
    done = [groups.done.function(ctx) for _ in range(2)]
    warm = standby == "warm"
    assert drivers == {"driver-standby" if warm else "driver-new"}
    assert done[0] == done[1] == {"job": JOB, "version": "2", "driver_id": drivers.pop()}
    started = [c for c in cluster.calls if c.startswith(("standby", "start from"))]
    assert len(started) == 1 and " v2 as " in started[0], started
    assert len(list(cluster.settings.layout.control_dir(JOB).glob("*[!t].json"))) == 1


def test_a_run_that_failed_at_its_plan_rolls_nothing_back() -> None:
    with pytest.raises(AirflowSkipException, match="failed before its plan"):
        groups.rollback.function(None)


def test_an_upgrade_that_took_no_savepoint_rolls_nothing_back(cluster: FakeCluster) -> None:
    """E.g. its warm standby did not come up: the old driver was never asked to stop, and
    killing it to restart it from a savepoint that does not exist would lose the job."""
    groups.plan.function(validated(V2, "warm", savepoint="fleet-v1-to-v2"))
    with pytest.raises(AirflowSkipException, match="savepoint fleet-v1-to-v2 was not taken"):
        groups.rollback.function({"job": JOB})
    assert cluster.calls == []
