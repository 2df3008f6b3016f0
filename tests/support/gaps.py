"""Figures and checks of the cluster-operation tests: processing gaps of a job (from its
status history, one line per committed batch) and the oracle once the data has settled."""

from __future__ import annotations

import json

from support.fleet import FleetRun
from support.integration import wait_until

from streamops.state.layout import StateLayout


def batch_times(layout: StateLayout, job: str) -> list[float]:
    path = layout.status_history(job)
    if not path.is_file():
        return []
    times = []
    for line in path.read_text(encoding="utf-8").splitlines():
        at = json.loads(line).get("last_batch_at") if line.strip() else None
        if isinstance(at, int | float):
            times.append(float(at))
    return sorted(times)


def processing_gap(layout: StateLayout, job: str, since: float, until: float) -> float:
    """The longest time without any committed batch around ``[since, until]``: from the last
    batch before ``since`` to the first after ``until``, the largest step between batches."""
    times = batch_times(layout, job)
    before = [t for t in times if t <= since][-1:]
    after = [t for t in times if t > until][:1]
    window = before + [t for t in times if since < t <= until] + after
    return max((b - a for a, b in zip(window, window[1:], strict=False)), default=0.0)


def settle_and_check(run: FleetRun, timeout: float = 900.0) -> None:
    """Let the simulators finish, then wait until every sink equals its recomputation.

    Unlike ``FleetRun.finish_and_check`` this does not read the job's source positions: a
    job restored (full restart) after the simulators ended is idle and its new driver
    reports no offsets, yet its sinks must still hold exactly what was sent.
    """
    assert run.alpha.wait_done(timeout) and run.beta.wait_done(timeout)
    last: list[str] = []

    def equal() -> bool:
        results = run.check()
        last[:] = [r.summary() for r in results]
        return all(r.ok for r in results)

    try:
        wait_until(equal, 300, "the sinks to equal their recomputation", interval=5)
    except AssertionError as exc:
        raise AssertionError(f"{exc}: {'; '.join(last)}") from None
