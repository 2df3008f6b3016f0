"""Airflow configuration for tests: a throwaway home with SQLite metadata and this project's
``dags/`` and ``plugins/`` (set before Airflow is first imported)."""

from __future__ import annotations

from collections.abc import MutableMapping
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def configure_airflow_env(environ: MutableMapping[str, str], home: Path) -> None:
    environ["AIRFLOW_HOME"] = str(home)
    environ["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"] = f"sqlite:///{home / 'airflow.db'}"
    environ["AIRFLOW__CORE__DAGS_FOLDER"] = str(REPO / "dags")
    environ["AIRFLOW__CORE__PLUGINS_FOLDER"] = str(REPO / "plugins")
    environ["AIRFLOW__CORE__LOAD_EXAMPLES"] = "False"
    environ["AIRFLOW__CORE__UNIT_TEST_MODE"] = "False"
    # The in-process execution API of dag.test() validates task tokens with this secret.
    environ["AIRFLOW__API_AUTH__JWT_SECRET"] = "streamops-tests-only"
    environ["AIRFLOW__LOGGING__LOGGING_LEVEL"] = "INFO"
