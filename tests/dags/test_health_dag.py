"""The health_check DAG, run with ``dag.test()`` against the session's real cluster and a
running fleet job: green; red naming the worker when a worker daemon is killed (the cluster
is restored afterwards: master + 2 workers); red naming the job when its driver is killed
behind the registry's back. Every run leaves one record in the health history."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from support.dag_runs import load_dag
from support.fleet import FleetRun
from support.integration import ClusterHandle, wait_until

from streamops import processes
from streamops.agent.processes import kill_agent
from streamops.cluster import daemons
from streamops.cluster.client import MasterClient
from streamops.health import checks as health

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("airflow_db", "streamops_env")]

JOB = "fleet-health"


def run_health(
    cluster: ClusterHandle, jobs: tuple[str, ...] = (JOB,)
) -> tuple[Any, dict[str, str], dict[str, Any]]:
    """Run the DAG once; return the run, each task's state and the history record it left."""
    before = len(health.read_history(cluster.settings.layout, 1000))
    started = time.monotonic()
    run = load_dag("health_check").test(run_conf={"jobs": list(jobs), "expected_workers": 2})
    print(f"health_check run {run.state} in {time.monotonic() - started:.1f} s")
    states = {ti.task_id: ti.state for ti in run.get_task_instances()}
    history = health.read_history(cluster.settings.layout, 1000)
    assert len(history) == before + 1, "every run appends one history record"
    return run, states, history[-1]


def kill_worker_without_driver(cluster: ClusterHandle, driver_id: str) -> str:
    """SIGKILL the agent, then the daemon (and its executors) of a worker that does not run
    the driver: a lost host, which its agent does not bring back."""
    client = MasterClient(cluster.settings)
    driver_worker = next(d.worker for d in client.active_drivers() if d.id == driver_id)
    victim = next(
        w.name
        for w in cluster.cluster.status().workers
        if w.name and w.state == "ALIVE" and w.id != driver_worker
    )
    record = daemons.read_pid_file(cluster.settings.layout, victim)
    assert record is not None
    kill_agent(cluster.settings, victim)
    processes.kill_group(record.pgid)
    processes.sweep(cluster.settings.layout.root, victim)
    wait_until(
        lambda: (
            not any(
                w.get("state") == "ALIVE" and w.get("id") == _id(cluster, victim)
                for w in client.state()["workers"]
            )
        ),
        60,
        f"the master to notice that {victim} is gone",
    )
    return victim


def _id(cluster: ClusterHandle, name: str) -> str | None:
    return next((w.id for w in cluster.cluster.status().workers if w.name == name), None)


def test_health_check_green_then_red_for_a_dead_worker_and_a_killed_job(
    spark_cluster: ClusterHandle, tmp_path: Path
) -> None:
    with FleetRun(spark_cluster, tmp_path, job=JOB, max_pings=100_000) as fleet:
        fleet.submit()
        registry = spark_cluster.registry

        run, states, record = run_health(spark_cluster)
        assert run.state == "success", record["summary"]
        assert set(states.values()) == {"success"}
        assert record["level"] in ("ok", "warn") and record["source"].startswith("airflow:")
        checked = {r["name"] for r in record["results"]}
        assert {f"{JOB}/fleetsim-alpha", f"{JOB}/fleetsim-beta", f"{JOB}/store"} <= checked

        driver = registry.view(JOB).driver_id
        assert driver
        victim = kill_worker_without_driver(spark_cluster, driver)
        try:
            run, states, record = run_health(spark_cluster)
        finally:
            spark_cluster.cluster.add_worker(victim)
        assert run.state == "failed"
        assert states["check_cluster"] == "failed" and states["report"] == "failed"
        assert f"worker {victim} is DEAD" in record["summary"], record["summary"]
        assert "1 of 2 expected workers ALIVE" in record["summary"]
        assert len(spark_cluster.cluster.status().alive_workers) == 2

        registry.wait_healthy(JOB, timeout=300)
        driver = registry.view(JOB).driver_id
        assert driver
        MasterClient(spark_cluster.settings).kill_submission(driver)  # behind the registry
        wait_until(lambda: not registry.view(JOB).is_live, 120, f"{JOB} to die")
        run, states, record = run_health(spark_cluster)
        assert run.state == "failed"
        assert states["check_jobs"] == "failed" and states["check_cluster"] == "success"
        assert f"job {JOB} is not running: state KILLED" in record["summary"], record["summary"]


def test_an_unknown_job_fails_the_first_task_naming_the_param(spark_cluster: ClusterHandle) -> None:
    run, states, record = run_health(spark_cluster, jobs=("no-such-job",))
    assert run.state == "failed"
    assert states["validate"] == "failed" and states["report"] == "failed"
    assert states["check_cluster"] == "upstream_failed"
    assert record["summary"] == "no check ran: task validate failed (see its log)"
    from streamops_airflow.exceptions import ParamError
    from streamops_airflow.params import known_job

    with pytest.raises(ParamError, match="invalid param 'jobs': unknown job 'no-such-job'"):
        known_job({"jobs": "no-such-job"}, "jobs", spark_cluster.settings)
