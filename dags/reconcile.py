"""
# reconcile

Every minute, and on demand: make every applied resource so (`streamops apply -f FILE`).

One pass of `streamops.declarative.reconcile`: for each savepoint request, then each job
deployment, observe the cluster and the state root, decide the one next action (deploy,
upgrade, suspend, restart, savepoint, prune), act through the procedures, and record the
status beside the resource (`streamops get deployments`, `streamops get savepoints`, the
dashboard). An action is recorded in flight before it starts, so a run killed in the middle
is finished by the next run, never repeated.

The task fails when an action failed (the status of its resource says why, and the same
generation is not tried again until it is applied anew); the failure is sent to the
`ReconcileFailedNotifier` (`<state>/declarative/notifications.jsonl` and the log). After every
pass it sends each resource whose status holds a failure as an alert to the alert webhooks
(the `streamops_alerts` connection and/or `STREAMOPS_ALERT_WEBHOOK_URL`), and a resource that
fails no more as resolved. Passes never overlap: one at a time per state root (a lock), and
one run of this DAG at a time.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

from airflow.sdk import Param, dag, task

from streamops_airflow.dag_defaults import START_DATE
from streamops_airflow.notifiers import ReconcileFailedNotifier

log = logging.getLogger(__name__)

ALERTS = ReconcileFailedNotifier("reconcile pass failed")


@dag(
    dag_id="reconcile",
    doc_md=__doc__,
    schedule=timedelta(minutes=1),
    start_date=START_DATE,
    catchup=False,
    max_active_runs=1,
    dagrun_timeout=timedelta(minutes=30),
    tags=["streamops", "declarative", "scheduled"],
    default_args={"owner": "streamops", "retries": 0},
    params={
        "job": Param("", type="string", title="Job",
                     description="only this job's deployment and savepoint requests; empty = "
                     "every applied resource"),
    },  # fmt: skip
)
def reconcile() -> None:
    @task(retries=0)
    def validate(params: dict[str, Any] | None = None) -> str:
        """Check the params: a job name, or none."""
        from streamops.exceptions import StreamopsError
        from streamops_airflow.exceptions import ParamError
        from streamops_contract.names import check_name

        job = str((params or {}).get("job") or "")
        if job:
            try:
                check_name("job", job)
            except StreamopsError as exc:
                raise ParamError("job", str(exc)) from exc
        return job

    @task(retries=0, on_failure_callback=ALERTS)
    def reconcile_pass(job: str, ti: Any = None) -> list[str]:
        """One pass; sends what fails (and what recovered) to the alerts; fails naming every
        action that failed."""
        from streamops.alerts import Scope
        from streamops.declarative import alerting
        from streamops.declarative.reconcile import reconcile_once
        from streamops_airflow.hooks import ops_settings
        from streamops_airflow.notifiers import ChecksFailed

        settings = ops_settings()
        result = reconcile_once(settings, only=job or None)
        lines = [f"{resource}: {action}: {text}" for resource, action, text in result.actions]
        for line in lines:
            log.info("%s", line)
        log.info("reconcile pass: %d decision(s) in %.2fs", len(lines), result.seconds)
        failed = "; ".join(result.errors) if result.errors else None
        ALERTS.send(ti, alerting.failing(settings.layout, result.errors, job or None),
                    scope=Scope(jobs=frozenset([job]) if job else None), failed=failed)
        if failed is not None:
            raise ChecksFailed(failed)
        return lines

    reconcile_pass(validate())


reconcile()
