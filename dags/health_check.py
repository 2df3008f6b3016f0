"""
# health_check

Every 5 minutes: is the Spark cluster and every declared job healthy?

One task per group of checks, so the grid shows at a glance what is red:

| task | checks |
|---|---|
| `check_cluster` | master ALIVE; expected workers ALIVE (a dead worker is named) |
| `check_jobs` | every declared job runs; a FAILED job shows its error |
| `check_progress` | per stage: last batch age (`max_batch_age_s`), processed vs input rate |
| `check_sources` | per source: reset upstream (fail), degraded (warn, then fail), losses, backlog |
| `check_sinks` | newest row in the job's store (`max_sink_age_s` while data flows) |

A declared job was submitted and not cancelled or deliberately stopped since.

`report` runs last whatever happened: it records the run in the health history
(`<state>/health/history.jsonl`, read it with `streamops health --history`), logs every
check, sends the failed ones to the `HealthCheckNotifier` (the log, and the alert webhooks:
the `streamops_alerts` connection and/or `STREAMOPS_ALERT_WEBHOOK_URL`; a check that fails no
more is sent as resolved) and fails with a message naming every failed check, e.g.
`worker worker-2 is DEAD; 1 of 2 expected workers ALIVE`. A red check fails its task at once
(no retry: the next run checks again in 5 minutes). A check that raises is a red check naming
the exception and where (file:line); the other checks still report. Same checks as
`streamops health`.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

import pendulum
from airflow.sdk import Param, dag, task
from airflow.sdk.exceptions import AirflowFailException

from streamops.health.checks import GROUPS
from streamops_airflow.notifiers import HealthCheckNotifier

log = logging.getLogger(__name__)

ALERTS = HealthCheckNotifier()


def _check_task_id(group: str) -> str:
    return f"check_{group}"


@dag(
    dag_id="health_check",
    doc_md=__doc__,
    schedule="*/5 * * * *",
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    dagrun_timeout=timedelta(minutes=4),
    tags=["streamops", "health", "scheduled"],
    default_args={"retries": 1, "retry_delay": timedelta(seconds=20)},
    params={
        "jobs": Param(
            [],
            type="array",
            items={"type": "string"},
            title="Jobs",
            description="Jobs to check; empty = every declared job.",
        ),
        "expected_workers": Param(
            None,
            type=["null", "integer"],
            minimum=0,
            title="Expected workers",
            description="ALIVE workers expected; empty = the cluster profile's `workers`.",
        ),
        "max_batch_age_s": Param(
            120,
            type="number",
            exclusiveMinimum=0,
            title="Max batch age (s)",
            description="Seconds a stage with data may go without committing a batch.",
        ),
        "max_sink_age_s": Param(
            300,
            type="number",
            exclusiveMinimum=0,
            title="Max sink age (s)",
            description="Seconds a job's store may go unwritten while data flows.",
        ),
    },
)
def health_check() -> None:
    @task(retries=0)
    def validate(params: dict[str, Any] | None = None) -> dict[str, Any]:
        """Check the params; return the jobs and thresholds the checks use."""
        from streamops_airflow import params as checks
        from streamops_airflow.hooks import ops_settings

        p, settings = dict(params or {}), ops_settings()
        jobs = [checks.known_job({"jobs": j}, "jobs", settings) for j in p.get("jobs") or []]
        thresholds = {
            "max_batch_age": float(p["max_batch_age_s"]),
            "max_sink_age": float(p["max_sink_age_s"]),
        }
        if p.get("expected_workers") is not None:
            thresholds["expected_workers"] = checks.positive_int(p, "expected_workers", 0)
        log.info("checking %s with %s", ", ".join(jobs) or "every declared job", thresholds)
        return {"jobs": jobs, "thresholds": thresholds}

    @task
    def check(group: str, config: dict[str, Any], ti: Any = None) -> str:
        """Run one group of checks; push their results (XCom ``results``, read by ``report``)
        and fail at once (no retry) when one of them fails."""
        from streamops.health import checks as health
        from streamops_airflow.hooks import ops_settings

        report = health.run_checks(
            ops_settings(),
            health.Thresholds(**config["thresholds"]),
            jobs=config["jobs"] or None,
            groups=[group],
        )
        results = [r.to_json() for r in report.results]
        for r in report.results:
            log.info("%-4s %s: %s", r.level.value, r.name, r.message)
        ti.xcom_push(key="results", value=results)
        if not report.ok:
            raise AirflowFailException(f"{group}: {report.summary()}")
        return report.summary()

    @task(trigger_rule="all_done", retries=0, on_failure_callback=ALERTS)
    def report(ti: Any = None) -> str:
        """Record the run in the health history, log every check, send the failed ones (and
        the recovered) to the alerts; fail naming every failed check."""
        from streamops.health import alerting
        from streamops.health import checks as health
        from streamops_airflow.hooks import ops_settings
        from streamops_airflow.notifiers import ChecksFailed

        results: list[health.CheckResult] = []
        config, ran = ti.xcom_pull(task_ids="validate"), []
        if config is None:
            message = "no check ran: task validate failed (see its log)"
            results.append(health.CheckResult("params", "params", health.Level.FAIL, message))
        for group in GROUPS if not results else ():
            got = ti.xcom_pull(task_ids=_check_task_id(group), key="results")
            if got:
                results += [health.CheckResult.from_json(r) for r in got]
                ran.append(group)
            else:
                message = f"{group} checks did not run (see task {_check_task_id(group)})"
                results.append(health.CheckResult(group, group, health.Level.FAIL, message))
        outcome = health.HealthReport(pendulum.now("UTC").timestamp(), tuple(results))
        health.record(ops_settings().layout, outcome, source=f"airflow:{ti.run_id}")
        for r in outcome.results:
            log.info("%-4s %s %s: %s", r.level.value, r.group, r.name, r.message)
        log.info("health %s: %s", outcome.level.value, outcome.summary())
        ALERTS.send(ti, alerting.firing(outcome.results),
                    scope=alerting.scope(ran, (config or {}).get("jobs") or ()),
                    failed=None if outcome.ok else outcome.summary())  # fmt: skip
        if not outcome.ok:
            raise ChecksFailed(outcome.summary())
        return outcome.summary()

    config = validate()
    checks = [check.override(task_id=_check_task_id(g))(g, config) for g in GROUPS]
    checks >> report()


health_check()
