"""Notifiers: every failed check of a scheduled DAG reaches a person, and so does its recovery.

:class:`AlertNotifier` is the one notifier code of the ``health_check`` and ``reconcile`` DAGs.
A task that judges calls :meth:`AlertNotifier.send` with what fails now (every run, green
ones too, so a recovery is sent as resolved), then fails with :class:`ChecksFailed` if
anything does; as the task's ``on_failure_callback`` it reports a task that failed without
judging (a crash, a timeout) as one alert named after the task. What fails is made by the
library (:mod:`streamops.health.alerting`, :mod:`streamops.declarative.alerting`).
Each failure is logged at ERROR, appended to a JSONL file when the notifier has one
(:class:`ReconcileFailedNotifier`: ``<state>/declarative/notifications.jsonl``, which the
dashboard's resources panel shows), and posted to the configured webhooks
(:mod:`streamops.alerts`: Alertmanager's JSON, or a chat's ``{"text": ...}``):

- the Airflow connection ``streamops_alerts`` (``AIRFLOW_CONN_STREAMOPS_ALERTS``): its URI
  (``http://alertmanager:9093/api/v2/alerts``) or extra ``url``; extras ``format`` and
  ``timeout``;
- and/or the environment: ``STREAMOPS_ALERT_WEBHOOK_URL`` (``_FORMAT``, ``_TIMEOUT_S``).

Sending never fails the task nor changes its outcome: a receiver that does not answer costs
the run its timeout (3 s by default) and a warning in the log.
"""

from __future__ import annotations

import logging
import time
from typing import Any
from urllib.parse import quote

from airflow.sdk import BaseHook, BaseNotifier
from airflow.sdk.exceptions import AirflowFailException, AirflowNotFoundException

from streamops.alerts import (
    EVERYTHING,
    NOTHING,
    TASK_GROUP,
    Firing,
    Scope,
    Webhook,
    deliver,
    webhooks_from_env,
)
from streamops.exceptions import StreamopsError
from streamops.state.layout import append_jsonl

log = logging.getLogger(__name__)

NOTIFICATIONS = "declarative/notifications.jsonl"
ALERTS_CONN_ID = "streamops_alerts"


class ChecksFailed(AirflowFailException):
    """A task judged, sent its failed checks itself, and fails (no retry) naming them."""


def configured_webhooks(conn_id: str = ALERTS_CONN_ID) -> list[Webhook]:
    """The webhooks of connection ``conn_id`` (when it exists) and of the environment."""
    hooks = webhooks_from_env()
    try:
        conn = BaseHook.get_connection(conn_id)
    except AirflowNotFoundException:
        return hooks
    extra = conn.extra_dejson
    url = str(extra.get("url") or "")
    if not url and conn.host:
        scheme = conn.conn_type if conn.conn_type in ("http", "https") else "http"
        auth = f"{quote(conn.login, safe='')}:{quote(conn.password or '', safe='')}@" \
            if conn.login else ""  # fmt: skip
        port = f":{conn.port}" if conn.port else ""
        url = f"{scheme}://{auth}{conn.host}{port}/{conn.schema or ''}"
    if not url:
        raise StreamopsError(f"connection {conn_id} names no webhook: give it a host, or an "
                             "extra 'url'")  # fmt: skip
    mine = Webhook.of(url, extra.get("format"), extra.get("timeout"))
    return [mine, *(h for h in hooks if h.url != mine.url)]


class AlertNotifier(BaseNotifier):
    """Sends the failed checks of one DAG's runs as alert ``alertname``."""

    template_fields = ("message",)

    def __init__(
        self, message: str, *, alertname: str, record: str | None = None, ttl_s: float = 900.0
    ) -> None:
        super().__init__()
        self.message = message
        self.alertname = alertname
        self.record = record  # a JSONL file under the state root, one line per failed run
        self.ttl_s = ttl_s  # how long Alertmanager holds a firing alert not sent again
        self._judged: set[tuple[str, str, str]] = set()  # the task runs that sent their checks

    def notify(self, context: Any) -> None:
        """The task failed: unless it sent its checks itself, one alert for the task."""
        ti, error = context.get("ti"), context.get("exception")
        if isinstance(error, ChecksFailed) or _run_of(ti) in self._judged:
            return  # (``dag.test()`` runs the callback without the exception)
        task = str(getattr(ti, "task_id", "") or "task")
        why = f"{type(error).__name__}: {error}" if error is not None else "the task failed"
        failure = Firing(task, f"{self.message}: {why}"[:4000], group=TASK_GROUP)
        self.send(ti, [failure], scope=NOTHING, failed=str(error or "")[:4000])

    def send(
        self, ti: Any, firing: list[Firing], *, scope: Scope = EVERYTHING,
        failed: str | None = None,
    ) -> None:  # fmt: skip
        """Log and post what fails now; the alerts in ``scope`` (what this run judged) that
        no longer fail are resolved. ``failed``: the task fails, with this error (recorded in
        the notifier's JSONL file). Never raises: alerting must not change the task's
        outcome."""
        if scope is not NOTHING:
            self._judged.add(_run_of(ti))
        try:
            self._send(ti, firing, scope, failed)
        except StreamopsError as exc:  # a bad webhook setting: it says which
            log.warning("the %s alerts could not be sent: %s", self.alertname, exc)
        except Exception:  # an unwritable state root, a bug: logged, the task's outcome kept
            log.warning("the %s alerts could not be sent", self.alertname, exc_info=True)

    def _send(self, ti: Any, firing: list[Firing], scope: Scope,
              failed: str | None) -> None:  # fmt: skip
        from streamops_airflow.hooks import ops_settings

        dag_id, run_id, task_id = _run_of(ti)
        layout = ops_settings().layout
        if failed is not None:
            log.error("%s: %s/%s %s: %s", self.message, dag_id, run_id, task_id, failed)
            if self.record:
                append_jsonl(layout.root / self.record, {
                    "at": time.time(), "message": self.message, "dag_id": dag_id,
                    "run_id": run_id, "task_id": task_id, "error": failed,
                })  # fmt: skip
        done = deliver(layout, self.alertname, firing, configured_webhooks(),
                       scope=scope, ttl_s=self.ttl_s, generator_url=_log_url(ti))  # fmt: skip
        for alert in done.new:
            log.error("%s firing: %s", self.alertname, alert.to_text())
        for alert in done.resolved:
            log.info("%s resolved: %s", self.alertname, alert.to_text())
        log.info("%s: %d firing (%d new), %d resolved, sent in %.2f s%s", self.alertname,
                 len(done.firing), len(done.new), len(done.resolved), done.seconds,
                 f"; not taken by {'; '.join(done.failed)}" if done.failed else "")  # fmt: skip


def _run_of(ti: Any) -> tuple[str, str, str]:
    """(dag, run, task) of a task instance."""
    return (str(getattr(ti, "dag_id", "")), str(getattr(ti, "run_id", "")),
            str(getattr(ti, "task_id", "")))  # fmt: skip


def _log_url(ti: Any) -> str:
    try:
        return str(getattr(ti, "log_url", "") or "")
    except Exception:  # a task instance without the API's base URL configured
        return ""


class HealthCheckNotifier(AlertNotifier):
    """The ``health_check`` DAG's: one alert per failed health check."""

    def __init__(self, message: str = "health check failed") -> None:
        super().__init__(message, alertname="StreamopsHealthCheckFailed", ttl_s=900.0)


class ReconcileFailedNotifier(AlertNotifier):
    """The ``reconcile`` DAG's: one alert per resource whose action failed, recorded in
    ``<state>/declarative/notifications.jsonl`` too."""

    def __init__(self, message: str = "reconcile failed") -> None:
        super().__init__(message, alertname="StreamopsReconcileFailed", record=NOTIFICATIONS,
                         ttl_s=300.0)  # fmt: skip
