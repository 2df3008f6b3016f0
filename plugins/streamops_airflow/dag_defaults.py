"""What every manually triggered streamops DAG shares: the project's DAG conventions.

``@dag(doc_md=__doc__, params={...}, **manual_dag("jobs", "upgrade"))`` gives no schedule,
a fixed start date, no catchup, one active run at a time, the ``streamops`` tag first, and
``default_args`` with retries (0 for DAGs whose steps are destructive and not resumable).
"""

from __future__ import annotations

from typing import Any

import pendulum

START_DATE = pendulum.datetime(2026, 1, 1, tz="UTC")


def manual_dag(*tags: str, retries: int = 1, retry_delay_s: int = 20) -> dict[str, Any]:
    return {
        "schedule": None,
        "start_date": START_DATE,
        "catchup": False,
        "max_active_runs": 1,
        "tags": ["streamops", *tags],
        "default_args": {
            "owner": "streamops",
            "retries": retries,
            "retry_delay": pendulum.duration(seconds=retry_delay_s),
        },
    }
