"""A real Airflow's REST API, as a test drives it: a token from the simple auth manager, DAG
runs triggered, awaited, and their failed tasks cleared (what an operator does in the UI)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import requests

from streamops.stack.airflow_stack import AirflowStack

FINISHED = ("success", "failed")


class Api:
    def __init__(self, stack: AirflowStack) -> None:
        self.url = f"{stack.options.url}/api/v2"
        self.headers = {"Authorization": f"Bearer {stack.token()}"}

    def __call__(self, method: str, path: str, **kwargs: Any) -> Any:
        r = requests.request(method, f"{self.url}{path}", headers=self.headers, timeout=90,
                             **kwargs)  # fmt: skip
        assert r.status_code < 400, f"{method} {path}: HTTP {r.status_code} {r.text[:500]}"
        return r.json()

    def trigger(self, dag: str, conf: dict[str, Any]) -> str:
        """Unpause ``dag`` (once the dag-processor has parsed it), trigger a run; its id."""
        wait_for(lambda: self("GET", f"/dags/{dag}"), 300, f"the dag-processor to parse {dag}")
        self("PATCH", f"/dags/{dag}", json={"is_paused": False})
        run = self("POST", f"/dags/{dag}/dagRuns", json={"logical_date": None, "conf": conf})
        return str(run["dag_run_id"])

    def run(self, dag: str, run_id: str) -> dict[str, Any]:
        return dict(self("GET", f"/dags/{dag}/dagRuns/{run_id}"))

    def wait_finished(self, dag: str, run_id: str, timeout: float = 600) -> str:
        """Wait until the run ends; its state (``success`` or ``failed``)."""
        done = wait_for(lambda: (r := self.run(dag, run_id))["state"] in FINISHED and r,
                        timeout, f"run {run_id} of {dag} to finish")  # fmt: skip
        return str(done["state"])

    def task_states(self, dag: str, run_id: str) -> dict[str, str]:
        found = self("GET", f"/dags/{dag}/dagRuns/{run_id}/taskInstances")["task_instances"]
        return {t["task_id"]: str(t["state"]) for t in found}

    def clear_failed(self, dag: str, run_id: str) -> list[str]:
        """Clear the run's failed and upstream-failed tasks (the UI's Clear → only failed):
        they run again and the run goes back to running; the task ids cleared."""
        body = {"dry_run": False, "dag_run_id": run_id, "only_failed": True,
                "reset_dag_runs": True, "include_downstream": True}  # fmt: skip
        cleared = self("POST", f"/dags/{dag}/clearTaskInstances", json=body)
        return [t["task_id"] for t in cleared.get("task_instances", [])]


def wait_for(check: Callable[[], Any], timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            value = check()
        except (AssertionError, requests.RequestException):
            value = None
        if value:
            return value
        time.sleep(2)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
