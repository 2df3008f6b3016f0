"""Provider metadata: registers the ``spark_standalone`` connection type with Airflow.

Found through the ``apache_airflow_provider`` entry point of the ``streamops`` distribution
(``pyproject.toml``). Airflow validates this against its ``provider_info.schema.json``; the
connection form shows the fields below, so a person can point every DAG at another cluster
from the UI (Admin → Connections) without touching code.
"""

from __future__ import annotations

from typing import Any

CONN_TYPE = "spark_standalone"
HOOK_CLASS = "streamops_airflow.hooks.SparkStandaloneHook"


def _field(label: str, description: str, kind: str = "string") -> dict[str, Any]:
    return {"label": label, "description": description, "schema": {"type": [kind, "null"]}}


def get_provider_info() -> dict[str, Any]:
    return {
        "package-name": "streamops",
        "name": "streamops",
        "description": "Operations for Spark Structured Streaming jobs on a standalone cluster.",
        "versions": ["0.1.0"],
        "integrations": [
            {"integration-name": "Spark Standalone (streamops)", "tags": ["apache"]},
        ],
        "triggers": [
            {
                "integration-name": "Spark Standalone (streamops)",
                "python-modules": ["streamops_airflow.triggers"],
            }
        ],
        "connection-types": [
            {
                "connection-type": CONN_TYPE,
                "hook-class-name": HOOK_CLASS,
                "hook-name": "Spark Standalone (streamops)",
                "ui-field-behaviour": {
                    "hidden-fields": ["schema", "login", "password"],
                    "relabeling": {"host": "Master host", "port": "REST submission port"},
                    "placeholders": {"host": "127.0.0.1", "port": "6066"},
                },
                "conn-fields": {
                    "webui_port": _field("Master web UI port", "JSON API port (8080)", "integer"),
                    "master_port": _field("Master RPC port", "spark:// port (7077)", "integer"),
                    "state_root": _field(
                        "State root", "directory of checkpoints, savepoints and job status"
                    ),
                },
            }
        ],
    }
