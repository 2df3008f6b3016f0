"""The hook of a Spark standalone cluster: its master JSON and REST submission API.

A thin wrapper over :class:`streamops.cluster.client.MasterClient` (no second HTTP client).
The hook's real product is the :class:`~streamops.settings.Settings` every task uses: built
from the ``spark_standalone`` connection when it exists, else from the ``STREAMOPS_*``
environment (what ``streamops stack`` and the test fixtures set), and the log says which.
Every DAG gets its settings through :func:`ops_settings` (or an operator's hook), so editing
the connection redirects all of them, the cluster and health DAGs as well as the job DAGs.

Connection fields: ``host`` = master host, ``port`` = REST submission port, extra
``webui_port`` (master JSON), ``master_port`` (``spark://`` port) and ``state_root``.
"""

from __future__ import annotations

from functools import cached_property
from typing import Any
from urllib.parse import quote

from airflow.sdk import BaseHook
from airflow.sdk.exceptions import AirflowNotFoundException

from streamops.cluster.client import MasterClient, WorkerInfo
from streamops.exceptions import StreamopsError
from streamops.job_view import JobView
from streamops.jobs import JobRegistry
from streamops.settings import Settings
from streamops.world.operations import Operations
from streamops_airflow.provider import CONN_TYPE


class SparkStandaloneHook(BaseHook):
    """Talks to one Spark standalone master; hands out the ops library's settings."""

    conn_name_attr = "spark_standalone_conn_id"
    default_conn_name = "spark_standalone_default"
    conn_type = CONN_TYPE
    hook_name = "Spark Standalone (streamops)"

    def __init__(self, spark_standalone_conn_id: str = default_conn_name) -> None:
        super().__init__()
        self.spark_standalone_conn_id = spark_standalone_conn_id

    @classmethod
    def get_ui_field_behaviour(cls) -> dict[str, Any]:
        return {
            "hidden_fields": ["schema", "login", "password"],
            "relabeling": {"host": "Master host", "port": "REST submission port"},
        }

    @cached_property
    def settings(self) -> Settings:
        """The ops library's settings for this cluster (connection, else ``STREAMOPS_*``)."""
        try:
            conn = self.get_connection(self.spark_standalone_conn_id)
        except AirflowNotFoundException:
            settings = Settings.from_env()
            self.log.info(
                "connection %s does not exist: using the STREAMOPS_* environment "
                "(master %s, state root %s)",
                self.spark_standalone_conn_id, settings.master_url, settings.state_root,
            )  # fmt: skip
            return settings
        extra = conn.extra_dejson
        settings = Settings.from_env(
            master_host=conn.host or None,
            rest_port=conn.port or None,
            master_webui_port=extra.get("webui_port"),
            master_port=extra.get("master_port"),
            state_root=extra.get("state_root"),
        )
        self.log.info(
            "connection %s: master %s, REST %s, state root %s",
            self.spark_standalone_conn_id, settings.master_url, settings.rest_url,
            settings.state_root,
        )  # fmt: skip
        return settings

    def get_conn(self) -> MasterClient:
        return MasterClient(self.settings)

    @cached_property
    def registry(self) -> JobRegistry:
        return JobRegistry(self.settings, self.get_conn())

    # --- small verbs -----------------------------------------------------------------
    def workers(self) -> list[WorkerInfo]:
        return self.get_conn().workers()

    def job(self, name: str) -> JobView:
        return self.registry.view(name)

    def test_connection(self) -> tuple[bool, str]:
        try:
            state = self.get_conn().state()
        except StreamopsError as exc:
            return False, str(exc)
        alive = [w for w in state.get("workers", []) if w.get("state") == "ALIVE"]
        return True, f"master {state.get('status')} at {state.get('url')}, {len(alive)} workers"


def ops_settings(conn_id: str = SparkStandaloneHook.default_conn_name) -> Settings:
    """The settings of a task of any DAG: connection ``conn_id`` when it exists, else the
    ``STREAMOPS_*`` environment (:attr:`SparkStandaloneHook.settings`, the one resolution)."""
    return SparkStandaloneHook(conn_id).settings


def ops_operations(conn_id: str = SparkStandaloneHook.default_conn_name) -> Operations:
    """The operations port the procedures' tasks act through (of :func:`ops_settings`)."""
    from streamops.world.port import operations

    return operations(ops_settings(conn_id))


def connection_uri(settings: Settings) -> str:
    """``settings`` as an Airflow connection URI (for ``AIRFLOW_CONN_SPARK_STANDALONE_DEFAULT``).

    The stack sets this variable so the default connection exists without a database write.
    """
    query = (
        f"webui_port={settings.master_webui_port}&master_port={settings.master_port}"
        f"&state_root={quote(str(settings.state_root), safe='')}"
    )
    conn_type = CONN_TYPE.replace("_", "-")
    return f"{conn_type}://{settings.master_host}:{settings.rest_port}/?{query}"
