"""Airflow itself works in this environment: a DAG runs end to end with ``dag.test()``.

Guards the web-stack pins in ``overrides.txt`` (newer fastapi / svcs break Airflow's
in-process execution API, so every task of every DAG would fail).
"""

from __future__ import annotations

from pathlib import Path

import pytest

DAG_SOURCE = '''
import pendulum
from airflow.sdk import Param, dag, task


@dag(schedule=None, start_date=pendulum.datetime(2026, 1, 1, tz="UTC"), catchup=False,
     params={"n": Param(2, type="integer", minimum=1)})
def smoke():
    @task
    def double(params=None):
        return params["n"] * 2

    @task
    def check(value):
        assert value == 10, value

    check(double())


smoke()
'''


@pytest.mark.usefixtures("airflow_db")
def test_a_dag_runs_with_dag_test(tmp_path: Path) -> None:
    from airflow.dag_processing.bundles.manager import DagBundlesManager
    from airflow.dag_processing.dagbag import BundleDagBag, sync_bag_to_db

    (tmp_path / "smoke.py").write_text(DAG_SOURCE)
    DagBundlesManager().sync_bundles_to_db()
    bag = BundleDagBag(dag_folder=tmp_path, bundle_path=tmp_path, bundle_name="dags-folder")
    assert not bag.import_errors
    sync_bag_to_db(bag, "dags-folder", None)
    run = bag.get_dag("smoke").test(run_conf={"n": 5})
    assert run.state == "success"
