"""The reconcile DAG's failure notifier records and logs the failed task."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from streamops_airflow.notifiers import NOTIFICATIONS, ReconcileFailedNotifier

ENV = "AIRFLOW_CONN_SPARK_STANDALONE_DEFAULT"


def test_a_failed_reconcile_is_recorded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV, raising=False)
    monkeypatch.setenv("STREAMOPS_STATE_ROOT", str(tmp_path))
    ti = SimpleNamespace(dag_id="reconcile", run_id="scheduled__1", task_id="reconcile_pass")
    notifier = ReconcileFailedNotifier("reconcile pass failed")
    notifier.notify({"ti": ti, "exception": RuntimeError("JobDeployment/tx: upgrade: rolled back")})
    (line,) = (tmp_path / NOTIFICATIONS).read_text().splitlines()
    record = json.loads(line)
    assert record["dag_id"] == "reconcile" and record["task_id"] == "reconcile_pass"
    assert record["error"] == "JobDeployment/tx: upgrade: rolled back"
    assert record["message"] == "reconcile pass failed"
