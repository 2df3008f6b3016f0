"""The cluster DAGs: ``rolling_scale`` (2 → 3 → 2 workers) and ``cluster_restart`` (r1 → r2
by the warm path: the job handed over, no daemon stopped) run end to end with ``dag.test()``
against the session cluster and a live fleet job, every cluster step through the node agents;
the oracle finds nothing lost or duplicated. Then the job ends and ``cluster_restart`` returns
the cluster to r1 by the full path (no job: every daemon stopped and started).
Bad params fail the first task naming the param. Wall time of each run and the processing
gap (from the job's status history) are printed as figures, never asserted.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from support.dag_runs import DAGS, run_dag, task_states
from support.fleet import FleetRun
from support.gaps import processing_gap, settle_and_check
from support.integration import ClusterHandle, wait_until

from streamops.cluster.releases import ReleaseStore
from streamops.world.cluster_nodes import alive_in_master

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("airflow_db"),
              pytest.mark.timeout(2400)]  # slow on 2 cores
JOB = "fleet-cluster-dags"
FIGURES: list[str] = []


@pytest.mark.parametrize("dag_id", ["rolling_scale", "cluster_restart"])
def test_dag_integrity(dag_id: str) -> None:
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(dag_folder=str(DAGS / f"{dag_id}.py"), include_examples=False)
    assert bag.import_errors == {}
    dag = bag.get_dag(dag_id)
    assert dag is not None and dag.dag_id == dag_id
    assert "streamops" in dag.tags and dag.doc_md and dag.doc_md.lstrip().startswith("#")
    assert dag.default_args.get("retries", 0) >= 1 and dag.max_active_runs == 1
    assert next(iter(dag.topological_sort())).task_id == "validate"


@pytest.mark.parametrize(("dag_id", "conf", "param"), [
    ("rolling_scale", {"workers": 0}, "workers"),
    ("rolling_scale", {"add": "worker-99"}, "add"),
    ("cluster_restart", {"release": "r9"}, "release"),
])  # fmt: skip
def test_bad_params_fail_the_first_task(
    dag_id: str, conf: dict[str, Any], param: str, streamops_env: dict[str, str],
    capfd: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    run, _ = run_dag(dag_id, conf)
    got = task_states(run)
    assert run.state == "failed" and got["validate"] == "failed", got
    assert all(s != "success" for t, s in got.items() if t != "validate"), got
    out = capfd.readouterr()
    assert f"invalid param '{param}'" in out.out + out.err


def test_cluster_dags_end_to_end(
    spark_cluster: ClusterHandle, streamops_env: dict[str, str], tmp_path: Path
) -> None:
    settings, registry = spark_cluster.settings, spark_cluster.registry

    def timed(label: str, dag_id: str, conf: dict[str, Any]) -> Any:
        since = time.time()
        run, seconds = run_dag(dag_id, conf)
        assert run.state == "success", (label, task_states(run))
        gap = processing_gap(settings.layout, JOB, since, time.time())
        FIGURES.append(f"{label}: {run.state} in {seconds:.1f}s, processing gap {gap:.1f}s")
        return run

    # data flows through every run (no max) and is ended after the last one
    with FleetRun(spark_cluster, tmp_path, job=JOB, max_pings=1_000_000) as fleet:
        fleet.submit()
        timed("rolling_scale 2→3", "rolling_scale", {"workers": 3})
        assert len(alive_in_master(settings)) == 3 and registry.view(JOB).is_live
        timed("rolling_scale 3→2", "rolling_scale", {"workers": 2})
        assert len(alive_in_master(settings)) == 2 and registry.view(JOB).is_live

        driver = registry.view(JOB).driver_id
        run = timed("cluster_restart r1→r2 (warm: handed over)", "cluster_restart",
                    {"release": "r2"})
        states = task_states(run)
        # the warm path: the job handed over to a new driver, no daemon stopped
        assert states["hand_over_all_jobs.hand_over"] == "success", states
        assert states["stop_cluster"] == states["savepoint_all_jobs.savepoint_with_cancel"] \
            == "skipped", states
        assert registry.view(JOB).healthy and registry.view(JOB).driver_id != driver
        wait_until(lambda: registry.view(JOB).status.classpath_release == "r2", 120,
                   "the job to report classpath release r2")  # a start-up hook, asynchronous
        fleet.end_data()
        settle_and_check(fleet)
    FIGURES.append("oracle: 0 lost, 0 duplicated (vehicles, vehicle_stats)")
    # back to r1 so the session's cluster is left as found: the job has ended, so this run
    # only restarts the daemons (restoring a job is what the run above measured)
    assert not registry.view(JOB).is_live
    run = timed("cluster_restart r2→r1 (no job: full)", "cluster_restart", {"release": "r1"})
    states = task_states(run)
    assert states["stop_cluster"] == states["start_cluster"] == "success", states
    assert states["hand_over_all_jobs.switch_release_live"] == "skipped", states
    print("\n" + "\n".join(FIGURES))
    assert ReleaseStore(settings).active() == "r1"
