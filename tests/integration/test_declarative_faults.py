"""Faults in combination in the middle of a declarative upgrade (``slow``, in the default run;
alone: ``./scripts/test.sh tests/integration/test_declarative_faults.py``).

v1 deployed and running → v2 applied and a reconcile pass (``streamops reconcile``, its own
process) upgrading it → once the upgrade has asked for its savepoint, an operator's
``streamops restart`` refused at once, naming the pass that holds the job → the master killed
(kill -9) and the deployment applied again as ``suspended`` while the master is down → the
master back (FILESYSTEM recovery), the upgrade pass ends however it ends → the next passes
must bring the deployment to ``Suspended`` with no driver of the job left, and say how →
resumed → running again; then the oracle over ``transaction_log``: every journal entry logged
exactly once, the versions in order (v1, then v2 if the upgrade got through).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from support.chaos.race_faults import BUSY
from support.declarative_files import apply, spec_file
from support.integration import ClusterHandle, describe_job, wait_until
from support.journal_oracle import check_logged_once, wait_logged

from streamops.agent.processes import kill_agent
from streamops.cluster.daemons import MASTER_NAME
from streamops.declarative.reconcile import reconcile_once
from streamops.sim.transactions import TransactionSimulator
from streamops.state.declarative.store import Store
from streamops.state.layout import read_json
from streamops_contract.sinks import journal_store

pytestmark = [pytest.mark.integration, pytest.mark.slow]
JOB = "transactions-decl-faults"


def _passes_until(settings: Any, store: Store, phase: str, most: int = 6) -> list[str]:
    """Reconcile passes until the deployment's phase is ``phase``; what each pass said."""
    said = []
    for _ in range(most):
        result = reconcile_once(settings, only=JOB)
        said += [f"{a}: {t}" for _, a, t in result.actions]
        said += [f"error: {e}" for e in result.errors]
        if store.deployment_status(JOB).phase == phase:
            return said
        time.sleep(2)
    raise AssertionError(f"deployment {JOB} not {phase} after {most} passes: "
                         f"{store.deployment_status(JOB)}; passes said {said}")  # fmt: skip


def test_suspend_applied_while_an_upgrade_pass_runs_and_the_master_dies(
    spark_cluster: ClusterHandle, tmp_path: Path
) -> None:
    settings, registry = spark_cluster.settings, spark_cluster.registry
    store = Store(settings.layout)
    store_url = f"sqlite:///{tmp_path / 'transactions.db'}"
    record_file = tmp_path / "entries.jsonl"
    engine = journal_store.engine_for(store_url, journal_store.LOG_TABLES)
    producer = TransactionSimulator(store_url, rate=40, seed=17, journal=record_file)
    v1 = spec_file(tmp_path, JOB, "transactions.yaml", store_url)
    v2 = spec_file(tmp_path, JOB, "transactions-v2.yaml", store_url)
    deployment: dict[str, Any] = {"kind": "JobDeployment", "name": JOB, "spec_file": str(v1)}
    producer.start()
    child: subprocess.Popen[bytes] | None = None
    try:
        apply(store, tmp_path, deployment)
        _passes_until(settings, store, "Running")
        wait_until(lambda: len(journal_store.read_log(engine)) >= 20, 60, "v1 to log entries")

        # v2 applied; a pass upgrades it in its own process
        deployment["spec_file"] = str(v2)
        apply(store, tmp_path, deployment)
        env = {**os.environ, **settings.to_env()}
        child = subprocess.Popen([sys.executable, "-m", "streamops", "reconcile", "--job", JOB],
                                 env=env, start_new_session=True,
                                 stdout=(tmp_path / "pass.log").open("wb"),
                                 stderr=subprocess.STDOUT)  # fmt: skip
        intent_file = settings.layout.job_dir(JOB) / "upgrade.json"

        def savepoint_asked() -> bool:
            intent = read_json(intent_file) or {}
            return "request_savepoint" in (intent.get("done") or []) or bool(intent.get("request"))

        wait_until(savepoint_asked, 300, "the upgrade pass to ask for its savepoint",
                   describe=lambda: str(read_json(intent_file)))  # fmt: skip

        # a second hand while the pass holds the job: an operator's restart is refused at
        # once, naming the pass that holds it (the reconcile's side: a unit test)
        typed = time.monotonic()
        busy = subprocess.run(
            [sys.executable, "-m", "streamops", "--state-root", str(settings.state_root),
             "restart", JOB, "--mode", "last-checkpoint"],
            env=env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        said = busy.stdout + busy.stderr
        assert busy.returncode != 0 and BUSY in said and f"pid {child.pid}" in said, said[-2000:]
        last_line = said.strip().splitlines()[-1][:300]
        print(f"a restart typed during the upgrade pass: refused in "
              f"{time.monotonic() - typed:.1f}s: {last_line}")  # fmt: skip

        # the master killed; the deployment suspended while it is down; the master back
        master = spark_cluster.cluster.daemons()[MASTER_NAME]
        kill_agent(spark_cluster.settings, MASTER_NAME)  # its host lost: nothing restarts it
        os.kill(master.pid, signal.SIGKILL)
        killed_at = time.monotonic()
        apply(store, tmp_path, {**deployment, "state": "suspended"})
        time.sleep(8)
        spark_cluster.cluster.start()
        print(f"master down {time.monotonic() - killed_at:.0f}s during the upgrade pass")
        code = child.wait(timeout=900)
        print(f"the upgrade pass ended with exit {code}:\n"
              + (tmp_path / "pass.log").read_text()[-3000:])  # fmt: skip

        said = _passes_until(settings, store, "Suspended")
        status = store.deployment_status(JOB)
        print(f"suspended: {status.message}; passes said {said}")
        assert not registry.view(JOB).is_live, describe_job(registry.view(JOB))
        wait_until(lambda: not registry.drivers(JOB), 60, "no driver of the job left",
                   describe=lambda: str(registry.drivers(JOB)))  # fmt: skip

        # resumed → running again
        apply(store, tmp_path, deployment)
        _passes_until(settings, store, "Running")
        assert registry.view(JOB).healthy, describe_job(registry.view(JOB))

        # the oracle: each entry once, the versions in order
        producer.stop()
        last = producer.last_sequence
        wait_logged(engine, last, describe=lambda: describe_job(registry.view(JOB)))
        versions = {int(r["sequence"]): str(r["job_version"])
                    for r in journal_store.read_log(engine)}  # fmt: skip
        check_logged_once(engine, record_file, last, lambda n: versions[n])
        in_order = [versions[n] for n in sorted(versions)]
        assert in_order == sorted(in_order), "versions out of order"
        print(f"logged once: {last} entries, by versions "
              f"{ {v: in_order.count(v) for v in sorted(set(in_order))} }")
    finally:
        producer.stop()
        if child is not None and child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()
        spark_cluster.let_go(JOB)
