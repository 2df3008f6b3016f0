"""What every manually triggered streamops DAG shares: the project's DAG conventions.

``@dag(doc_md=__doc__, params={...}, **manual_dag("jobs", "upgrade"))`` gives no schedule,
a fixed start date, no catchup, one active run at a time, the ``streamops`` tag first, and
``default_args`` with retries (0 for DAGs whose steps are destructive and not resumable).
"""

from __future__ import annotations

from typing import Any

import pendulum

from streamops_airflow.procedure_tasks import release_run_leases

START_DATE = pendulum.datetime(2026, 1, 1, tz="UTC")


def manual_dag(*tags: str, retries: int = 1, retry_delay_s: int = 20) -> dict[str, Any]:
    return {
        "schedule": None,
        "start_date": START_DATE,
        "catchup": False,
        "max_active_runs": 1,
        "tags": ["streamops", *tags],
        # a run's job operation leases (taken by its tasks) are given up when it ends
        "on_success_callback": release_run_leases,
        "on_failure_callback": release_run_leases,
        "default_args": {
            "owner": "streamops",
            "retries": retries,
            "retry_delay": pendulum.duration(seconds=retry_delay_s),
        },
    }


def spare_param() -> Any:
    """The ``allow_no_spare`` param of a DAG whose first task checks admission (N+1)."""
    from airflow.sdk import Param

    return Param(False, type="boolean", title="Allow no spare worker",
                 description="go on when the cluster would not hold every job after losing "
                             "its largest worker (N+1): warned instead of refused")  # fmt: skip
