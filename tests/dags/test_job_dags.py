"""The job DAGs run end to end with ``dag.test()`` against the session's real cluster.

One fleet-pings job with both simulators goes through: deploy → a duplicate deploy refused
→ an incompatible v2 stopped at plan (job untouched, nothing rolled back) → upgrade v1 → v2
(cold) → a crashing v3 rolled back to v2 → the same v3 as a warm standby fails before it is
ready (v2 untouched) → restart (savepoint); then the oracle: every sink equals its
recomputation, nothing lost or duplicated. A restart from the last checkpoint is the same DAG
with another ``mode``; its procedure is the chaos campaign's ``restart-checkpoint`` step. The
warm upgrade that succeeds (``standby`` auto) runs through the DAG in a real Airflow in the
chaos campaign's last step (``tests/support/chaos/airflow_fault.py``), which checks that the
standby took over. Bad params fail the first task naming the param. Wall times and
processing gaps are printed (figures, not asserts).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from support.dag_runs import run_dag, task_states
from support.fleet import FleetRun
from support.integration import ClusterHandle

from streamops.state.savepoints import catalogue
from streamops.world.restore import earliest_positions

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("airflow_db", "streamops_env")]
JOB = "fleet-dags-it"
SPARE = {"allow_no_spare": True}
"""The session's cluster (two workers of 3 cores) holds one fleet job with no spare worker
(N+1) only while no other job of the session's state root is declared: a job another test
left submitted would refuse these runs in validate (admission is the unit tests' subject)."""
FIGURES: list[str] = []


def processing_gap(history: Path, since: float, until: float) -> float | None:
    """Longest pause between committed batches (any stage) in ``[since, until]``."""
    if not history.is_file():
        return None
    times = sorted(
        float(rec["last_batch_at"])
        for rec in map(json.loads, history.read_text().splitlines())
        if rec.get("last_batch_at") and since - 30 <= float(rec["last_batch_at"]) <= until
    )  # fmt: skip
    gaps = [b - a for a, b in zip(times, times[1:], strict=False)]
    return round(max(gaps), 1) if gaps else None


def figure(name: str, run: Any, seconds: float, gap: float | None = None) -> None:
    line = f"{name}: {run.state} in {seconds:.1f} s" + (f", processing gap {gap} s" if gap else "")
    FIGURES.append(line)
    print(line)


def test_bad_params_fail_the_first_task(spark_cluster: ClusterHandle, tmp_path: Path,
                                        capfd: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    for dag_id, conf, param in (
        ("deploy_job", {"spec": str(tmp_path / "missing.yaml")}, "spec"),
        ("restart_job", {"job": "no-such-job", "mode": "savepoint"}, "job"),
        ("savepoint_and_upgrade", {"job": "no-such-job", "spec": "fleet-pings-v2.yaml"}, "job"),
    ):
        run, _ = run_dag(dag_id, conf)
        assert run.state == "failed", dag_id
        got = task_states(run)
        assert got["validate"] == "failed", (dag_id, got)
        assert all(s != "success" for t, s in got.items() if t != "validate"), (dag_id, got)
        assert f"invalid param '{param}'" in capfd.readouterr().out + capfd.readouterr().err


@pytest.mark.timeout(2400)  # six DAG runs, each starting drivers: slow on 2 shared cores
def test_job_dags_end_to_end(spark_cluster: ClusterHandle, tmp_path: Path) -> None:
    settings, registry = spark_cluster.settings, spark_cluster.registry
    history = settings.layout.status_history(JOB)
    # data flows through every step (no max); it is ended after the last one
    with FleetRun(spark_cluster, tmp_path, job=JOB, rate=15, max_pings=1_000_000) as fleet:
        v1 = fleet.spec_file()
        run, secs = run_dag("deploy_job", {"spec": str(v1), **SPARE})
        figure("deploy_job", run, secs)
        assert run.state == "success", task_states(run)
        assert registry.view(JOB).healthy

        run, secs = run_dag("deploy_job", {"spec": str(v1), **SPARE})
        figure("deploy_job (duplicate, refused)", run, secs)
        assert run.state == "failed" and task_states(run)["submit"] == "failed"
        assert registry.view(JOB).is_live

        bad = fleet.spec_file("fleet-pings-v2.yaml", version="2-bad",
                              entrypoint="drill_jobs.fleet_pings_changed_accumulator")
        run, secs = run_dag("savepoint_and_upgrade", {"job": JOB, "spec": str(bad), **SPARE})
        figure("savepoint_and_upgrade (incompatible, stopped at plan)", run, secs)
        got = task_states(run)
        assert run.state == "failed" and got["plan"] == "failed", got
        assert got["savepoint_with_cancel.request"] != "success", got
        assert got["verify.rollback"] == "skipped", got  # nothing was stopped
        view = registry.view(JOB)
        assert view.is_live and view.version == "1"

        t0 = time.time()
        run, secs = run_dag("savepoint_and_upgrade",
                            {"job": JOB, "spec": str(fleet.spec_file("fleet-pings-v2.yaml")),
                             "savepoint": "dags-v1-to-v2", "standby": "cold", **SPARE})  # fmt: skip
        figure("savepoint_and_upgrade v1 -> v2 (cold)", run, secs,
               processing_gap(history, t0, time.time()))  # fmt: skip
        assert run.state == "success", task_states(run)
        assert task_states(run)["abort_standby"] == "skipped"
        assert registry.view(JOB).version == "2"
        positions = earliest_positions(catalogue.get_savepoint(settings.layout, "dags-v1-to-v2"))

        crash = fleet.spec_file("fleet-pings-v2.yaml", version="3",
                                entrypoint="drill_jobs.crash_on_start")
        t0 = time.time()
        run, secs = run_dag("savepoint_and_upgrade",
                            {"job": JOB, "spec": str(crash), "standby": "cold", **SPARE})
        figure("savepoint_and_upgrade v2 -> crashing v3 (rolled back)", run, secs,
               processing_gap(history, t0, time.time()))  # fmt: skip
        got = task_states(run)
        assert run.state == "failed", got
        assert got["verify.wait_healthy"] == "failed" and got["verify.rollback"] == "failed", got
        view = registry.view(JOB)
        assert view.healthy and view.version == "2", view
        intent = json.loads((settings.layout.job_dir(JOB) / "upgrade.json").read_text())
        assert intent["phase"] == "rolled-back", intent

        # as a warm standby, the crashing v3 fails before it is ready: v2 is not touched
        before = registry.view(JOB).driver_id
        run, secs = run_dag("savepoint_and_upgrade",
                            {"job": JOB, "spec": str(crash), "standby": "warm", **SPARE})
        figure("savepoint_and_upgrade v2 -> crashing v3 (warm standby failed)", run, secs)
        got = task_states(run)
        assert run.state == "failed" and got["start_standby"] == "failed", got
        assert got["savepoint_with_cancel.request"] == "upstream_failed", got
        assert got["verify.rollback"] == "skipped" and got["abort_standby"] == "skipped", got
        view = registry.view(JOB)
        assert view.healthy and view.version == "2" and view.driver_id == before, view

        t0 = time.time()
        run, secs = run_dag("restart_job", {"job": JOB, "mode": "savepoint"})
        figure("restart_job (savepoint)", run, secs, processing_gap(history, t0, time.time()))
        assert run.state == "success", task_states(run)
        view = registry.view(JOB)
        assert view.healthy and view.version == "2", view

        fleet.end_data()
        fleet.finish_and_check(avg_speed_from=positions)
    print("\n".join(["", "DAG run figures (lost 0, duplicated 0 by the oracle):", *FIGURES]))
