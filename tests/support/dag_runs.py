"""Run the repository's DAGs with ``dag.test()`` (they must be synced into the ``dags-folder``
bundle first: ``dag.test()`` refuses a DAG that is not serialized)."""

from __future__ import annotations

import importlib.util
import time
from pathlib import Path
from typing import Any

DAGS = Path(__file__).resolve().parents[2] / "dags"


def _one_execution_api() -> None:
    """``dag.test()`` runs each task through Airflow's in-process Execution API, and Airflow
    builds that API anew for every task (a FastAPI app with its versioned routes, its DAG bag,
    an event-loop thread for the WSGI bridge, never stopped): about 4 s of CPU per task on
    this machine. Built once per test process instead, it serves every task of every run
    (each task still gets its own client and DAG bag). A health_check run of two tasks: 8.8-10.1
    s built per task, 1.3-1.4 s built once (2026-11-30, docs/performance.md). An Airflow
    without that function runs as it comes."""
    from functools import cache

    from airflow.sdk.execution_time import supervisor

    build = getattr(supervisor, "in_process_api_server", None)
    if build is not None and not hasattr(build, "cache_info"):
        supervisor.in_process_api_server = cache(build)


def dag_object(name: str) -> Any:
    """``dags/<name>.py`` executed as a module, its DAG built (no metadata DB)."""
    spec = importlib.util.spec_from_file_location(f"{name}_dag", DAGS / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, name)()


def dag_tasks(name: str) -> dict[str, Any]:
    """The tasks of ``dags/<name>.py`` by task id."""
    return {t.task_id: t for t in dag_object(name).tasks}


def load_dag(dag_id: str) -> Any:
    """Parse ``dags/<dag_id>.py``, sync it to the metadata DB, return the DAG (its
    ``dag.test()`` on the process's one Execution API: :func:`_one_execution_api`)."""
    from airflow.dag_processing.bundles.manager import DagBundlesManager
    from airflow.dag_processing.dagbag import BundleDagBag, sync_bag_to_db

    _one_execution_api()
    DagBundlesManager().sync_bundles_to_db()
    bag = BundleDagBag(dag_folder=DAGS / f"{dag_id}.py", bundle_path=DAGS,
                       bundle_name="dags-folder")  # fmt: skip
    assert not bag.import_errors, bag.import_errors
    sync_bag_to_db(bag, "dags-folder", None)
    return bag.get_dag(dag_id)


def run_dag(dag_id: str, conf: dict[str, Any]) -> tuple[Any, float]:
    """Run ``dag_id`` once with ``conf``; (dag run, seconds)."""
    dag = load_dag(dag_id)
    t0 = time.monotonic()
    run = dag.test(run_conf=conf)
    return run, time.monotonic() - t0


def task_states(run: Any) -> dict[str, str]:
    return {ti.task_id: str(ti.state) for ti in run.get_task_instances()}
