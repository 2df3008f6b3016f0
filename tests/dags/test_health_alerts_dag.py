"""The health_check DAG with ``dag.test()`` and no cluster (nothing listens on the master's
ports), its alerts posted to a real receiver on loopback: a check that raises fails its task
alone, the report still comes whole (logged, recorded) and fails the run, and every failed
check is an alert. (A recovery resolved and a receiver that hangs: tests/dags/
test_reconcile_dag.py, through the same notifier; what a health run resolves:
tests/unit/streamops/test_alerts.py.)"""

from __future__ import annotations

from typing import Any

import pytest
from support.airflow_fixture import environ_set
from support.alert_receiver import receiving
from support.dag_runs import load_dag, task_states

from streamops.health import checks as health
from streamops.health.checks import CheckResult, HealthInputs
from streamops.settings import Settings

pytestmark = pytest.mark.usefixtures("airflow_db")

CONF = {"expected_workers": 0}




def boom(obs: HealthInputs) -> list[CheckResult]:
    raise RuntimeError("a check with a bug")


def run_health() -> tuple[Any, dict[str, str]]:
    run = load_dag("health_check").test(run_conf=CONF)
    return run, task_states(run)


def test_a_raising_check_fails_alone_with_the_whole_report_and_every_failure_alerts(
    settings: Settings, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setitem(health.CHECKS, "progress", boom)
    with receiving() as rx, environ_set({"STREAMOPS_ALERT_WEBHOOK_URL": rx.url}):
        run, states = run_health()
        assert run.state == "failed"
        assert states["check_progress"] == "failed" and states["check_cluster"] == "failed"
        assert states["check_jobs"] == states["check_sinks"] == "success"
        assert states["report"] == "failed"
        [record] = health.read_history(settings.layout, 5)
        assert [r["group"] for r in record["results"]] == list(health.GROUPS)
        crashed = record["results"][2]
        assert crashed["level"] == "fail" and "RuntimeError: a check with a bug" in (
            crashed["message"]) and "test_health_alerts_dag.py:" in crashed["message"]
        assert "ok   sinks sinks: no running job sink to check" in caplog.text  # all logged
        fired = {a["labels"]["check"]: a for a in rx.alerts()}
        assert set(fired) == {"master", "progress"}
        assert fired["progress"]["labels"]["alertname"] == "StreamopsHealthCheckFailed"
        assert "RuntimeError" in fired["progress"]["annotations"]["message"]

