"""Notifiers: what a failed run tells people.

:class:`ReconcileFailedNotifier` is the ``reconcile`` DAG's ``on_failure_callback``: it
appends one JSON line per failed task to ``<state>/declarative/notifications.jsonl`` (the
dashboard's resources panel shows the newest ones; an ops team points a log shipper or a chat
bridge at the file) and logs it at ERROR. A webhook would be one more ``notify`` here; this
machine has nowhere to send one.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from airflow.sdk import BaseNotifier

from streamops.state.layout import append_jsonl

log = logging.getLogger(__name__)

NOTIFICATIONS = "declarative/notifications.jsonl"


class ReconcileFailedNotifier(BaseNotifier):
    """Record and log a failed reconcile task: the DAG run, the task and the error."""

    template_fields = ("message",)

    def __init__(self, message: str = "reconcile failed") -> None:
        super().__init__()
        self.message = message

    def notify(self, context: Any) -> None:
        from streamops_airflow.hooks import ops_settings

        ti, error = context.get("ti"), context.get("exception")
        record = {
            "at": time.time(), "message": self.message,
            "dag_id": getattr(ti, "dag_id", None), "run_id": getattr(ti, "run_id", None),
            "task_id": getattr(ti, "task_id", None), "error": str(error)[:4000] if error else "",
        }  # fmt: skip
        log.error("%s: %s/%s %s: %s", self.message, record["dag_id"], record["run_id"],
                  record["task_id"], record["error"])  # fmt: skip
        append_jsonl(ops_settings().layout.root / NOTIFICATIONS, record)
