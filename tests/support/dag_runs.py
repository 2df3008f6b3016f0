"""Run the repository's DAGs with ``dag.test()`` (they must be synced into the ``dags-folder``
bundle first: ``dag.test()`` refuses a DAG that is not serialized)."""

from __future__ import annotations

import importlib.util
import time
from pathlib import Path
from typing import Any

DAGS = Path(__file__).resolve().parents[2] / "dags"


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
    """Parse ``dags/<dag_id>.py``, sync it to the metadata DB, return the DAG."""
    from airflow.dag_processing.bundles.manager import DagBundlesManager
    from airflow.dag_processing.dagbag import BundleDagBag, sync_bag_to_db

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
