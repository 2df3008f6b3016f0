"""Connection arguments of the embedded Airflow's SQLite metadata database.

Airflow's api-server, scheduler, dag-processor and triggerer all write to one SQLite file; a
writer waits for the file lock up to sqlite3's ``timeout`` (5 s by default), and on a loaded
machine a UI action could fail with "database is locked" (HTTP 500). Named in
``AIRFLOW__DATABASE__SQL_ALCHEMY_CONNECT_ARGS`` by :mod:`streamops.airflow_stack`.
"""

from __future__ import annotations

from typing import Any

SQLITE_CONNECT_ARGS: dict[str, Any] = {"timeout": 60}
