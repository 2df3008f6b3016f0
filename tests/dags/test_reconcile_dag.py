"""The reconcile DAG with ``dag.test()``, without a cluster: a pass with nothing applied is
green; a pass that cannot read a resource fails, and the failure notifier records it and posts
an alert to a real receiver on loopback, resolved by the next green pass; a receiver that
hangs costs a pass its short timeout and changes no outcome. The passes on a real cluster are
tests/integration/test_declarative.py (the DAG's task is the same ``reconcile_once``)."""

from __future__ import annotations

import json
import time

import pytest
from support.airflow_fixture import environ_set
from support.alert_receiver import hanging, receiving
from support.dag_runs import load_dag, task_states

from streamops.settings import Settings
from streamops.state.declarative.resources import SavepointRequest
from streamops.state.declarative.store import Store
from streamops_airflow.notifiers import NOTIFICATIONS

pytestmark = pytest.mark.usefixtures("airflow_db")




def test_a_green_pass_then_a_failed_pass_notifies(settings: Settings) -> None:
    dag = load_dag("reconcile")
    with receiving() as rx, environ_set({"STREAMOPS_ALERT_WEBHOOK_URL": rx.url}):
        run = dag.test(run_conf={"job": ""})
        assert task_states(run) == {"validate": "success", "reconcile_pass": "success"}
        assert rx.bodies == []  # nothing fails, nothing fired before: nothing to say

        store = Store(settings.layout)
        store.apply(SavepointRequest(name="ghost-sp", job="ghost"))
        broken = store.resource_file("SavepointRequest", "ghost-sp")
        broken.write_text("{not json")
        run = dag.test(run_conf={"job": ""})
        assert task_states(run)["reconcile_pass"] == "failed"
        lines = (settings.layout.root / NOTIFICATIONS).read_text().splitlines()
        record = json.loads(lines[-1])
        assert record["task_id"] == "reconcile_pass" and record["dag_id"] == "reconcile"
        [fired] = rx.alerts()
        assert fired["labels"]["alertname"] == "StreamopsReconcileFailed"
        # the unreadable file is that resource's failure (the pass went on): the alert names it
        assert fired["labels"]["check"] == "SavepointRequest/ghost-sp"
        assert fired["annotations"]["message"].startswith("SavepointRequest/ghost-sp: invalid:")

        broken.unlink()
        rx.clear()
        run = dag.test(run_conf={"job": ""})
        assert task_states(run)["reconcile_pass"] == "success"
        [resolved] = rx.alerts()
        assert resolved["labels"] == fired["labels"] and resolved["endsAt"] < fired["endsAt"]

    broken.write_text("{not json")
    with hanging() as url, environ_set({"STREAMOPS_ALERT_WEBHOOK_URL": url,
                                        "STREAMOPS_ALERT_TIMEOUT_S": "1"}):  # fmt: skip
        started = time.monotonic()
        run = dag.test(run_conf={"job": ""})
        hung_s = time.monotonic() - started
    print(f"a failed reconcile run with a receiver that hangs (timeout 1 s): {hung_s:.1f} s")
    assert task_states(run) == {"validate": "success", "reconcile_pass": "failed"}
    assert len((settings.layout.root / NOTIFICATIONS).read_text().splitlines()) == 2
