"""The DAGs' alert notifier: where its webhooks come from (the ``streamops_alerts`` connection,
the environment), a crashed task's alert to a real loopback receiver, the failed checks of a
health report and of a reconcile pass with their jobs, and a receiver that hangs costing the
task nothing."""

from __future__ import annotations

import json
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from support.alert_receiver import hanging, receiving

from streamops.alerts import Webhook, deliver
from streamops.declarative.alerting import failing as reconcile_firing
from streamops.health import checks as health
from streamops.health.alerting import firing as health_firing
from streamops.health.alerting import scope as health_scope
from streamops.health.report import CheckResult, Level
from streamops.state.declarative.resources import Deployment, SavepointRequest
from streamops.state.declarative.status import DeploymentStatus, FailedAction, RequestStatus
from streamops.state.declarative.store import Store
from streamops.state.layout import StateLayout
from streamops_airflow import notifiers
from streamops_airflow.notifiers import (
    NOTIFICATIONS,
    HealthCheckNotifier,
    ReconcileFailedNotifier,
    configured_webhooks,
)

CONN = "AIRFLOW_CONN_STREAMOPS_ALERTS"
TI = SimpleNamespace(dag_id="health_check", run_id="scheduled__1", task_id="report")


@pytest.fixture
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> StateLayout:
    for key in (CONN, "AIRFLOW_CONN_SPARK_STANDALONE_DEFAULT", "STREAMOPS_ALERT_WEBHOOK_URL"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("STREAMOPS_STATE_ROOT", str(tmp_path))
    return StateLayout.at(tmp_path)


def test_the_webhooks_of_the_connection_and_the_environment(
    state: StateLayout, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert configured_webhooks() == []
    monkeypatch.setenv(CONN, "http://am:p%40ss@alertmanager:9093/api/v2/alerts?timeout=2")
    monkeypatch.setenv("STREAMOPS_ALERT_WEBHOOK_URL", "https://chat.example.com/hooks/abc")
    monkeypatch.setenv("STREAMOPS_ALERT_WEBHOOK_FORMAT", "text")
    assert configured_webhooks() == [
        Webhook("http://am:p%40ss@alertmanager:9093/api/v2/alerts", "alertmanager", 2.0),
        Webhook("https://chat.example.com/hooks/abc", "text", 3.0),
    ]
    monkeypatch.setenv(CONN, json.dumps({"conn_type": "http", "extra": {
        "url": "https://chat.example.com/hooks/abc", "format": "text"}}))  # fmt: skip
    assert configured_webhooks() == [Webhook("https://chat.example.com/hooks/abc", "text", 3.0)]


def test_a_crashed_task_is_one_alert_and_its_next_judging_run_resolves_it(
    state: StateLayout, monkeypatch: pytest.MonkeyPatch
) -> None:
    with receiving() as rx:
        monkeypatch.setenv("STREAMOPS_ALERT_WEBHOOK_URL", rx.url)
        notifier = ReconcileFailedNotifier("reconcile pass failed")
        ti = SimpleNamespace(dag_id="reconcile", run_id="scheduled__1", task_id="reconcile_pass")
        notifier.notify({"ti": ti, "exception": ValueError("Expecting value: line 1")})
        notifier.send(ti, [])  # the next pass judged everything and nothing failed
    fired, resolved = rx.alerts()
    assert fired["labels"] == {"alertname": "StreamopsReconcileFailed", "check": "reconcile_pass",
                               "group": "task", "level": "fail", "severity": "critical"}
    assert fired["annotations"]["message"] == ("reconcile pass failed: ValueError: Expecting "
                                               "value: line 1")  # fmt: skip
    assert resolved["labels"] == fired["labels"] and resolved["startsAt"] == fired["startsAt"]
    # the JSONL record and its log line stay as they were: one per failed task
    (line,) = (state.root / NOTIFICATIONS).read_text().splitlines()
    assert json.loads(line)["error"] == "Expecting value: line 1"


def test_the_failed_health_checks_with_their_jobs() -> None:
    results = [CheckResult("cluster", "workers", Level.FAIL, "worker worker-2 is DEAD"),
               CheckResult("jobs", "transactions", Level.FAIL, "job transactions FAILED"),
               CheckResult("progress", "fleet-pings/vehicles", Level.WARN, "slow"),
               CheckResult("sources", "fleet-pings/beta:x", Level.FAIL, "reset"),
               CheckResult("jobs", "procedure/upgrade/fleet-pings", Level.FAIL, "unfinished"),
               CheckResult("cluster", "procedure/scale", Level.FAIL, "unfinished"),
               CheckResult("progress", "progress", Level.FAIL, "the progress check failed")]
    got = [(f.group, f.check, f.job) for f in health_firing(results)]  # fmt: skip
    assert got == [("cluster", "workers", ""), ("jobs", "transactions", "transactions"),
                   ("sources", "fleet-pings/beta:x", "fleet-pings"),
                   ("jobs", "procedure/upgrade/fleet-pings", "fleet-pings"),
                   ("cluster", "procedure/scale", ""), ("progress", "progress", "")]  # fmt: skip


def test_a_health_run_resolves_only_the_groups_that_ran_and_the_jobs_it_was_asked(
    state: StateLayout,
) -> None:
    failed = health_firing([
        CheckResult("cluster", "workers", Level.FAIL, "worker worker-2 is DEAD"),
        CheckResult("progress", "fleet-pings/vehicles", Level.FAIL, "no batch for 312 s"),
        CheckResult("sinks", "transactions/store", Level.FAIL, "not written for 900 s")])
    deliver(state, "H", failed, [])
    # the progress task did not run, and only fleet-pings was asked for
    out = deliver(state, "H", [], [], scope=health_scope(["cluster", "sinks"], ["fleet-pings"]))
    assert [a.check for a in out.resolved] == ["workers"]
    assert {a.check for a in out.firing} == {"fleet-pings/vehicles", "transactions/store"}
    out = deliver(state, "H", [], [], scope=health_scope(health.GROUPS))
    assert {a.check for a in out.resolved} == {"fleet-pings/vehicles", "transactions/store"}


def test_a_failed_resource_fires_until_its_status_holds_no_failure(state: StateLayout) -> None:
    store = Store(state)
    store.apply(Deployment.model_validate({"name": "tx", "spec": {
        "name": "tx", "version": "1", "entrypoint": "spark_jobs.transactions"}}))  # fmt: skip
    store.apply(SavepointRequest(name="tx-sp", job="tx"))
    store.save_status("JobDeployment", "tx", DeploymentStatus(failed=FailedAction(
        generation=1, action="deploy", message="no room", at=1.0, count=2)))  # fmt: skip
    store.save_status("SavepointRequest", "tx-sp", RequestStatus(state="Failed",
                                                                 message="tx is not running"))
    errors = ["SavepointRequest/tx-sp: take: tx is not running", "JobDeployment/other: boom"]
    got = {f.check: (f.job, f.message) for f in reconcile_firing(state, errors)}
    assert got == {
        "JobDeployment/tx": ("tx", "JobDeployment/tx: deploy failed for generation 1 (2 "
                                   "time(s)): no room"),
        "SavepointRequest/tx-sp": ("tx", "SavepointRequest/tx-sp: savepoint request Failed: tx "
                                         "is not running"),
        "JobDeployment/other": ("other", "JobDeployment/other: boom"),
    }  # fmt: skip
    assert [f.check for f in reconcile_firing(state, errors, "other")] == ["JobDeployment/other"]
    store.save_status("JobDeployment", "tx", DeploymentStatus())
    assert [f.check for f in reconcile_firing(state, [])] == ["SavepointRequest/tx-sp"]


def test_a_hanging_receiver_costs_the_task_its_timeout_and_never_raises(
    state: StateLayout, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    with hanging() as url:
        monkeypatch.setenv("STREAMOPS_ALERT_WEBHOOK_URL", url)
        monkeypatch.setenv("STREAMOPS_ALERT_TIMEOUT_S", "1")
        started = time.monotonic()
        HealthCheckNotifier().send(TI, health_firing(
            [CheckResult("cluster", "master", Level.FAIL, "the master does not answer")]))
        seconds = time.monotonic() - started
    print(f"a send to a hanging receiver (timeout 1 s) took {seconds:.2f} s")
    assert "did not take the alerts" in caplog.text
    monkeypatch.setenv("STREAMOPS_ALERT_WEBHOOK_FORMAT", "xml")  # a bad setting: logged only
    HealthCheckNotifier().send(TI, [])
    assert "format 'xml' is not one of" in caplog.text
    assert notifiers.ALERTS_CONN_ID == "streamops_alerts"
