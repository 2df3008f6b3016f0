"""The operator tutorial as desired state, on the session's real cluster, one job throughout:
resources applied as files, reconciled by passes of :mod:`streamops.declarative.reconcile`.

apply v1 → running; a savepoint request with cancel → Exported, the job Cancelled; a request
for the stopped job → Failed; apply v2 from the request's savepoint → running; a pass with
nothing to do; apply v3 → upgraded (savepoint, plan, start); suspend → Suspended (savepoint
with cancel); resume, the reconcile killed (SIGKILL) during the start → the next pass finishes
it without a second submission; the driver killed → restarted from its last checkpoint; a
schedule takes savepoints and prunes them by count and by
age, keeping the newest restorable one and leaving the request's export alone. Then the oracle
over ``transaction_log``: every journal entry logged exactly once across v1, v2 and v3.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from support.declarative_files import apply, spec_file
from support.integration import ClusterHandle, describe_job, wait_until
from support.journal_oracle import check_logged_once, wait_logged

from spark_jobs import transactions
from streamops.declarative import inflight
from streamops.declarative.reconcile import PassResult, reconcile_once
from streamops.job_reads import read_submissions
from streamops.sim.transactions import TransactionSimulator
from streamops.state.declarative.store import Store
from streamops.state.savepoints import catalogue
from streamops.world.restore import earliest_positions
from streamops_contract.sinks import journal_store

pytestmark = pytest.mark.integration
JOB = "transactions-decl"
EXPORT = "tx-decl-v1-final"


def passed(result: PassResult, *actions: str) -> PassResult:
    assert result.ok, result.errors
    done = [a for _, a, _ in result.actions]
    for action in actions:
        assert action in done, result.actions
    return result


def test_tutorial_as_desired_state(spark_cluster: ClusterHandle, tmp_path: Path) -> None:
    settings, registry = spark_cluster.settings, spark_cluster.registry
    store = Store(settings.layout)
    store_url = f"sqlite:///{tmp_path / 'transactions.db'}"
    record_file = tmp_path / "entries.jsonl"
    engine = journal_store.engine_for(store_url, journal_store.LOG_TABLES)
    producer = TransactionSimulator(store_url, rate=40, seed=11, journal=record_file)
    v1 = spec_file(tmp_path, JOB, "transactions.yaml", store_url)
    v2 = spec_file(tmp_path, JOB, "transactions-v2.yaml", store_url)
    v3 = spec_file(tmp_path, JOB, "transactions-v2.yaml", store_url, version="3")
    deployment: dict[str, Any] = {"kind": "JobDeployment", "name": JOB, "spec_file": str(v1)}
    figures: dict[str, float] = {}
    producer.start()
    started = time.monotonic()
    try:
        # apply v1 → running
        apply(store, tmp_path, deployment, "deployment")
        t0 = time.monotonic()
        passed(reconcile_once(settings), "deploy")
        figures["apply → running (s)"] = time.monotonic() - t0
        status = store.deployment_status(JOB)
        assert status.phase == "Running" and status.version == "1" and status.driver
        assert status.condition("Ready") and status.condition("Ready").status == "True"  # type: ignore[union-attr]
        wait_until(lambda: len(journal_store.read_log(engine)) >= 20, 60, "v1 to log entries")

        # a savepoint request with cancel → Exported; the deployment stays stopped
        apply(store, tmp_path, {"kind": "SavepointRequest", "name": EXPORT, "job": JOB,
                                "cancel": True}, "export")  # fmt: skip
        passed(reconcile_once(settings), "take-savepoint")
        request = store.request_status(EXPORT)
        assert request.state == "Exported" and request.creation_time, request
        assert not registry.view(JOB).is_live
        assert store.deployment_status(JOB).phase == "Cancelled"
        manifest = catalogue.get_savepoint(settings.layout, EXPORT)
        position = int(earliest_positions(manifest)[transactions.SOURCE_ID]["sequence"])
        passed(reconcile_once(settings), "none")  # not started again: the same generation
        assert not registry.view(JOB).is_live
        # a request for a job that is not running → Failed, with the reason
        apply(store, tmp_path, {"kind": "SavepointRequest", "name": "tx-decl-late", "job": JOB},
              "late")  # fmt: skip
        result = reconcile_once(settings)
        late = store.request_status("tx-decl-late")
        assert late.state == "Failed" and "not running" in late.message, late
        assert result.errors and "tx-decl-late" in result.errors[0]
        written_at_export = producer.emitted
        wait_until(lambda: producer.emitted > written_at_export + 40, 30, "entries meanwhile")

        # apply v2 from the request's savepoint → it logs the entries after it
        deployment.update(spec_file=str(v2), initial_savepoint=EXPORT)
        apply(store, tmp_path, deployment, "deployment")
        passed(reconcile_once(settings), "deploy")
        assert registry.view(JOB).version == "2"
        assert store.deployment_status(JOB).phase == "Running"

        # a pass with nothing to do
        t0 = time.monotonic()
        result = passed(reconcile_once(settings), "none")
        figures["reconcile pass, nothing to do (s)"] = time.monotonic() - t0

        # apply v3 → the upgrade procedure (plan, savepoint with cancel, start, verify)
        deployment.update(spec_file=str(v3))
        apply(store, tmp_path, deployment, "deployment")
        t0 = time.monotonic()
        passed(reconcile_once(settings), "upgrade")
        figures["apply v3 → upgrade done (s)"] = time.monotonic() - t0
        status = store.deployment_status(JOB)
        assert status.phase == "Running" and status.version == "3", status
        times = status.last_action
        figures["upgrade gap: savepoint + start until healthy (s)"] = (
            times["savepoint_s"] + times["start_s"]
        )
        upgrade_sp = next(r.name for r in status.savepoint_history if r.kind == "upgrade")
        upgraded_at = int(earliest_positions(catalogue.get_savepoint(
            settings.layout, upgrade_sp))[transactions.SOURCE_ID]["sequence"])  # fmt: skip

        # suspend → a savepoint with cancel; the cause is recorded
        apply(store, tmp_path, {**deployment, "state": "suspended"}, "deployment")
        passed(reconcile_once(settings), "suspend")
        status = store.deployment_status(JOB)
        assert status.phase == "Suspended" and status.suspended and status.suspended.savepoint
        assert not registry.view(JOB).is_live

        # resume, with the reconcile killed during the start → the next pass finishes it
        apply(store, tmp_path, deployment, "deployment")
        subs_before = len(read_submissions(settings.layout.submissions_file(JOB)))
        env = {**os.environ, **settings.to_env()}
        child = subprocess.Popen([sys.executable, "-m", "streamops", "reconcile", "--job", JOB],
                                 env=env, start_new_session=True, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL)  # fmt: skip
        try:
            wait_until(lambda: len(read_submissions(settings.layout.submissions_file(JOB)))
                       > subs_before, 60, "the killed pass to submit")  # fmt: skip
        finally:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()
        record = inflight.load(store, "JobDeployment", JOB)
        assert record is not None and record.action == "deploy", record
        passed(reconcile_once(settings), "continue")
        subs = read_submissions(settings.layout.submissions_file(JOB))[subs_before:]
        assert [s["event"] for s in subs] == ["submitted"], subs  # no second submission
        assert inflight.load(store, "JobDeployment", JOB) is None
        status = store.deployment_status(JOB)
        assert status.phase == "Running" and status.suspended is None
        assert registry.view(JOB).healthy

        # its driver killed behind the reconcile's back (not relaunched) → restarted from the
        # last checkpoint
        dead = registry.view(JOB).driver_id
        assert dead
        registry.kill_driver(JOB, dead)
        wait_until(lambda: not registry.view(JOB).is_live, 60, "the killed driver to end")
        passed(reconcile_once(settings), "restart-last-checkpoint")
        assert registry.view(JOB).healthy and registry.view(JOB).driver_id != dead

        # a schedule: periodic savepoints, pruned by count, then by age
        apply(store, tmp_path, {**deployment, "savepoints": {"interval": "1s", "max_count": 2}},
              "deployment")  # fmt: skip
        for _ in range(3):
            passed(reconcile_once(settings), "periodic-savepoint")
            time.sleep(1.1)  # the next one is due
        history = store.deployment_status(JOB).savepoint_history
        # the newest two, both periodic: the upgrade's and the suspend's were pruned (the
        # running driver was restarted from its checkpoint, not from the suspend's savepoint)
        assert [r.kind for r in history] == ["periodic", "periodic"], history
        listed = {i.name for i in catalogue.list_savepoints(settings.layout, JOB)}
        assert {r.name for r in history} <= listed and EXPORT in listed
        assert upgrade_sp not in listed
        apply(store, tmp_path, {**deployment, "savepoints": {"interval": "1 day",
                                                             "max_age": "2s"}}, "deployment")
        time.sleep(2.5)
        passed(reconcile_once(settings), "prune")
        history = store.deployment_status(JOB).savepoint_history
        newest = max(catalogue.list_savepoints(settings.layout, JOB), key=lambda i: i.created_at)
        # every savepoint of the history is older than 2 s: the newest restorable one stays
        assert [r.name for r in history] == [newest.name], history
        assert catalogue.get_savepoint(settings.layout, EXPORT)  # the request's export stays

        # the oracle: every entry exactly once, each by the version that ran then
        producer.stop()
        last = producer.last_sequence
        wait_logged(engine, last, describe=lambda: describe_job(registry.view(JOB)))
        check_logged_once(engine, record_file, last,
                          lambda n: "1" if n <= position else "2" if n <= upgraded_at else "3")
        figures["test (s)"] = time.monotonic() - started
        print("declarative figures: " + json.dumps({k: round(v, 2) for k, v in figures.items()}))
    finally:
        producer.stop()
        spark_cluster.let_go(JOB)
