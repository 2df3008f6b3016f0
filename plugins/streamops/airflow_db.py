"""Connection arguments of the embedded Airflow's SQLite metadata database.

Airflow's api-server, scheduler, dag-processor and triggerer all write to one SQLite file; a
writer waits for the file lock up to sqlite3's ``timeout`` (5 s by default), and on a loaded
machine a UI action could fail with "database is locked" (HTTP 500). Named in
``AIRFLOW__DATABASE__SQL_ALCHEMY_CONNECT_ARGS`` by :mod:`streamops.airflow_stack`.

The file is also switched to write-ahead logging: in SQLite's default rollback journal a
reader's open transaction blocks every writer, and a UI write (pausing a DAG) waited behind the
scheduler's and dag-processor's reads past the client's timeout. In WAL mode readers never
block a writer, and a writer waits only for another writer's short commit.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

SQLITE_CONNECT_ARGS: dict[str, Any] = {"timeout": 60}


def use_wal(db: Path) -> str:
    """Switch the SQLite file ``db`` to write-ahead logging (kept in the file); the mode set."""
    with sqlite3.connect(db, timeout=SQLITE_CONNECT_ARGS["timeout"]) as conn:
        (mode,) = conn.execute("PRAGMA journal_mode=WAL").fetchone()
    conn.close()
    return str(mode)
