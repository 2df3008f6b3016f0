"""The reconcile DAG with ``dag.test()``, without a cluster: a pass with nothing applied is
green; a pass that cannot read a resource fails, and the failure notifier records it. The
passes on a real cluster are tests/integration/test_declarative.py (the DAG's task is the same
``reconcile_once``)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from support.dag_runs import load_dag, task_states

from streamops.declarative.resources import SavepointRequest
from streamops.declarative.store import Store
from streamops.settings import Settings
from streamops_airflow.notifiers import NOTIFICATIONS

pytestmark = pytest.mark.usefixtures("airflow_db")


@pytest.fixture
def settings(tmp_path: Path, free_port: Callable[[], int]) -> Iterator[Settings]:
    settings = Settings.from_env({}, state_root=str(tmp_path / "state"),
                                 master_webui_port=free_port(), rest_port=free_port())  # fmt: skip
    env = settings.to_env()
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        yield settings
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def test_a_green_pass_then_a_failed_pass_notifies(settings: Settings) -> None:
    dag = load_dag("reconcile")
    run = dag.test(run_conf={"job": ""})
    assert task_states(run) == {"validate": "success", "reconcile_pass": "success"}

    store = Store(settings.layout)
    store.apply(SavepointRequest(name="ghost-sp", job="ghost"))
    store.resource_file("SavepointRequest", "ghost-sp").write_text("{not json")
    run = dag.test(run_conf={"job": ""})
    assert task_states(run)["reconcile_pass"] == "failed"
    lines = (settings.layout.root / NOTIFICATIONS).read_text().splitlines()
    record = json.loads(lines[-1])
    assert record["task_id"] == "reconcile_pass" and record["dag_id"] == "reconcile"
