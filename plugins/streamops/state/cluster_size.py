"""The number of workers the cluster should run: the profile's, until a scale says otherwise.

``streamops scale`` (and the ``rolling_scale`` DAG) records the count it reached in
``<state>/cluster/desired-workers.json``; the health check expects that many ALIVE workers.
Stopping the whole cluster removes the record, so the next start expects the profile's count.
"""

from __future__ import annotations

import time

from streamops.state.layout import StateLayout, read_json, write_json_atomic


def record_desired_workers(layout: StateLayout, workers: int, *, by: str) -> None:
    """Record that the cluster should run ``workers`` ALIVE workers (``by``: who said so)."""
    write_json_atomic(layout.desired_workers_file,
                      {"workers": int(workers), "by": by, "at": time.time()})  # fmt: skip


def desired_workers(layout: StateLayout) -> int | None:
    """The recorded worker count; ``None`` when no scale recorded one (the profile's holds)."""
    try:
        data = read_json(layout.desired_workers_file)
    except ValueError:  # a torn record: the profile's count
        return None
    workers = data.get("workers") if isinstance(data, dict) else None
    return workers if isinstance(workers, int) and workers >= 0 else None


def forget_desired_workers(layout: StateLayout) -> None:
    layout.desired_workers_file.unlink(missing_ok=True)
