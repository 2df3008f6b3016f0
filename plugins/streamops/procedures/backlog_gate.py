"""The backlog gate of the changes that stop a job: before an upgrade, a restart or a cluster
restart stops a job whose spec declares ``latency_slo``, its catch-up is predicted
(:mod:`streamops.procedures.catch_up`) from three measured terms, and a change that would
keep the latency above the objective longer than allowed waits (up to the SLO's
``max_wait``, a line logged per look) or is refused with the numbers; ``now`` (the CLI's
``--now``, the DAGs' param ``now``) skips it.

The terms are read through the operations port and the state root: the job's view (its
stages' rates; one call to the master, and only for a job with an SLO), the port's
``backlog`` (the sources' probes health reads), and the procedure's own last run on the job
(its intent record's first and last step) against the job's status history, one line per
committed batch: the longest pause around it, as the benchmarks measure a gap. A job without
``latency_slo`` is not looked at: no read, no wait.
"""

from __future__ import annotations

import json
import logging

from streamops.cluster.capacity import nodes_of_master
from streamops.exceptions import JobNotFound, StreamopsError
from streamops.procedures.catch_up import (
    CATCH_UP_S,
    DEFAULT_GAP_S,
    TARGET_UTILIZATION,
    Measured,
    Prediction,
    StageRates,
    advise,
    longest_pause,
    predict,
)
from streamops.spec import JobSpec
from streamops.state.layout import StateLayout, read_json
from streamops.world.operations import BacklogSeen, Operations

log = logging.getLogger("streamops.procedures.backlog_gate")

POLL_S = 10.0
"""How often a waiting change looks at the backlog again."""
HISTORY_TAIL = 512 * 1024
"""The bytes of the status history read: its newest lines (it grows one line a batch)."""
CLUSTER_INTENT = "cluster-restart"


def batch_times(layout: StateLayout, job: str) -> list[float]:
    """The times of the job's newest committed batches (its status history's tail)."""
    path = layout.status_history(job)
    try:
        with path.open("rb") as f:
            f.seek(max(0, f.seek(0, 2) - HISTORY_TAIL))
            text = f.read().decode("utf-8", errors="replace")
    except FileNotFoundError:
        return []
    times = []
    for line in text.splitlines():
        try:
            at = json.loads(line).get("last_batch_at")
        except (ValueError, AttributeError):
            continue  # the first line cut by the tail, or a torn one
        if isinstance(at, int | float):
            times.append(float(at))
    return times


def recent_gap(layout: StateLayout, job: str, procedure: str) -> tuple[float, str]:
    """The gap of ``procedure``'s last run on ``job`` (``upgrade``, ``restart``: the job's
    intent record; ``cluster-restart``: the cluster's), and where it comes from; else
    :data:`DEFAULT_GAP_S`, assumed."""
    path = (layout.intent_file(procedure) if procedure == CLUSTER_INTENT
            else layout.intent_record(job, procedure))  # fmt: skip
    try:
        record = read_json(path)
    except ValueError:
        record = None
    record = record if isinstance(record, dict) else {}
    steps = [s.get("at") for s in record.get("steps", []) if isinstance(s, dict)]
    times = [t for t in [*record.get("times", {}).values(), *steps] if isinstance(t, int | float)]
    if times:
        gap = longest_pause(batch_times(layout, job), min(times), max(times))
        if gap is not None:
            return gap, f"its last {procedure}"
    return DEFAULT_GAP_S, "assumed: no measured run"


def measure(ops: Operations, job: str, procedure: str) -> Measured | None:
    """The three terms of ``job`` now, through the port and the state root; None when the job
    is not live (a change stops nothing of it)."""
    view = ops.registry.view(job)
    if not view.is_live:
        return None
    stages = tuple(StageRates(name, s.input_rows_per_second or 0.0,
                              s.processed_rows_per_second or 0.0)
                   for name, s in view.stages.items()
                   if s.processed_rows_per_second is not None)  # fmt: skip
    backlog = ops.backlog.of(view) if ops.backlog else BacklogSeen(0, ("no backlog probe",))
    gap, source = recent_gap(ops.layout, job, procedure)
    return Measured(gap, source, backlog.rows, stages, backlog.uncounted)


def hold_for_backlog(
    ops: Operations, job: str, spec: JobSpec, procedure: str, *, now: bool,
    error: type[StreamopsError],
) -> Prediction | None:  # fmt: skip
    """Return once stopping ``job`` keeps within its ``latency_slo`` (at once without one, or
    ``now``); meanwhile wait, a line a look; past ``max_wait`` raise ``error`` naming the
    terms and the prediction. Nothing is stopped here."""
    slo = spec.latency_slo
    if slo is None:
        return None
    if now:
        log.info("%s of %s: --now, the backlog is not waited for", procedure, job)
        return None
    start = ops.clock.monotonic()
    while True:
        measured = measure(ops, job, procedure)
        if measured is None:
            return None
        seen = predict(measured, slo.objective_s, slo.allowed_breach_s)
        if seen.ok:
            log.info("%s of %s: within the latency objective: %s", procedure, job, seen.render())
            return seen
        waited = ops.clock.monotonic() - start
        left = slo.max_wait_s - waited
        if left <= 0:
            raise error(
                f"{procedure} of {job} refused, nothing was stopped: stopping it now would keep "
                f"the latency above its objective too long: {seen.render()}; waited "
                f"{waited:.0f}s of {slo.max_wait:s}. Go anyway with --now (DAG param now)")
        log.info("%s of %s: waiting for the backlog (%.0fs of %s): %s", procedure, job,
                 waited, slo.max_wait, seen.render())  # fmt: skip
        ops.clock.sleep(min(POLL_S, left))


def scale_advice(ops: Operations, job: str, *, catch_up_s: float = CATCH_UP_S,
                 utilization: float = TARGET_UTILIZATION) -> list[str]:  # fmt: skip
    """``streamops scale --advise JOB``: the workers and state partitions ``job`` needs for
    ``utilization`` (:func:`~streamops.procedures.catch_up.advise`), the formula's terms
    shown; the restart time is its last restart's gap. Changes nothing."""
    measured = measure(ops, job, "restart")
    if measured is None:
        raise JobNotFound(f"job {job} is not running: no rates to size it by")
    cores_now = ops.registry.current_spec(job).resources.max_cores
    workers = nodes_of_master(ops.client.state())
    per_worker = max((w.cores for w in workers), default=0)
    found = advise(measured, cores_now=cores_now, cores_per_worker=per_worker,
                   catch_up_s=catch_up_s, utilization=utilization)  # fmt: skip
    if found is None:
        return [f"measured: {measured.terms()}",
                "no advice: no stage reports its rates, or the master lists no worker"]
    return [*found.lines(measured, catch_up_s=catch_up_s, utilization=utilization),
            f"now: {cores_now} cores (spark.cores.max), {len(workers)} workers of "
            f"{per_worker} cores"]
