"""Which running Airflow components ``streamops up`` starts again, and the scheduler's wait for
the api-server.

A component that runs is normally left alone. Two cases are not:

- its embedded PostgreSQL was down and has just been started under it: every session ended
  with the server, and a scheduler whose database went away can hang in its executor's
  shutdown while its last heartbeat, read back from the recovered database, still looks
  recent (so ``/monitor/health`` says healthy for up to half a minute);
- the api-server reports it unhealthy (no recent heartbeat) once past its start's grace.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from datetime import datetime
from typing import Any

import requests

from streamops.processes import PidRecord

HEALTH_KEYS = {
    "api-server": "metadatabase",
    "scheduler": "scheduler",
    "dag-processor": "dag_processor",
    "triggerer": "triggerer",
}
"""Each component's entry in ``/api/v2/monitor/health``."""

START_GRACE = 90.0
"""Seconds a started component may report unhealthy before ``up`` starts it again (its first
heartbeat, the dag-processor's first parse)."""


def stale_components(
    running: Mapping[str, PidRecord],
    health: Mapping[str, Any] | None,
    database_restarted: bool,
    now: datetime,
) -> tuple[list[str], str]:
    """The components of ``running`` to start again, and why (in words)."""
    if database_restarted:
        return list(running), "their embedded PostgreSQL was down and has been started again"
    stale = []
    for component, record in running.items():
        entry = (health or {}).get(HEALTH_KEYS[component])
        status = entry.get("status") if isinstance(entry, dict) else None
        try:
            age = (now - datetime.fromisoformat(record.started_at)).total_seconds()
        except ValueError:  # no start time recorded: past any grace
            age = START_GRACE
        if status == "unhealthy" and age >= START_GRACE:
            stale.append(component)
    return stale, "running but reported unhealthy by the api-server (no recent heartbeat)"


def wait_for_api_server(base_url: str, timeout: float = 300.0, every: float = 1.0) -> bool:
    """Block until the api-server at ``base_url`` answers (any HTTP status); whether it did.

    The scheduler waits for it before it starts: every task it launches talks to the
    api-server's execution API, and a task launched while the api-server is still starting
    (after ``up`` restarted the components) fails at once with "connection refused", which an
    upgrade's verify task would take for the new version's failure."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            requests.get(f"{base_url}/api/v2/monitor/health", timeout=5)
            return True
        except requests.RequestException:
            time.sleep(every)
    return False
