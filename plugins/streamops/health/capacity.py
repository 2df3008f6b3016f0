"""Health checks of capacity: jobs waiting for cores, and whether the cluster holds its jobs
after the loss of its largest worker. Pure: they judge an :class:`HealthInputs` (the master's
``/json/``, the workers by node name, what each job's spec holds) with
:mod:`streamops.cluster.capacity`.

- ``jobs`` / ``<job>/capacity`` — a job whose application holds fewer cores than its spec
  wants: ``fail`` once it has had no executor for longer than the failover goal
  (``Thresholds.max_core_wait``, 15 s), ``warn`` before, and ``warn`` while it runs smaller
  (some executors granted); each names the executor it waits for, the cores and memory free
  per worker, and the way out (the worker to add, or a job to cancel);
- ``cluster`` / ``capacity`` — the free cores per worker, and N+1: ``ok`` while the workers
  left after the loss of the largest hold every declared job, else ``warn`` naming the
  shortfall (a cluster that cannot fail over is not yet down).
"""

from __future__ import annotations

from typing import Any

from streamops.cluster.capacity import Node, app_waits, free_text, nodes_of_master, spare_check
from streamops.cluster.capacity import wait_detail as _detail
from streamops.health.report import CheckResult, HealthInputs, Level


def _names(obs: HealthInputs) -> dict[str, str]:
    """Worker id → node name, for this state root's workers."""
    seen = obs.workers.workers if obs.workers else ()
    return {w.id: w.name for w in seen if w.id and w.name}


def nodes(obs: HealthInputs) -> list[Node]:
    return nodes_of_master(obs.master or {}, _names(obs))


def add_worker_command(obs: HealthInputs) -> str:
    """The command that adds a worker: the first of this state root's workers that is not
    ALIVE (a dead node's), else one worker more than ALIVE now."""
    master: dict[str, Any] = obs.master or {}
    entries = master.get("workers") or []
    alive = sum(1 for w in entries if w.get("state") == "ALIVE")
    seen = obs.workers
    down = [w.name for w in (seen.workers if seen else ()) if w.name and w.state != "ALIVE"]
    if seen and not down:
        alive_names = {seen.log_names.get(f"{w.get('host')}:{w.get('port')}")
                       for w in entries if w.get("state") == "ALIVE"}  # fmt: skip
        down = [name for w in entries if w.get("state") == "DEAD"
                and (name := seen.log_names.get(f"{w.get('host')}:{w.get('port')}"))
                and name not in alive_names]  # fmt: skip
    if down:
        return f"streamops scale --add {sorted(down)[0]}"
    return f"streamops scale --workers {alive + 1}"


def check_job_capacity(obs: HealthInputs) -> list[CheckResult]:
    """One result per job whose application waits for cores (none when every job holds
    what its spec wants)."""
    if obs.master is None:
        return []
    needs = {n: obs.needs[n] for n in obs.jobs if n in obs.needs}
    out = []
    workers, way_out = nodes(obs), add_worker_command(obs)
    for wait in app_waits(obs.master, needs, obs.now):
        text = _detail(wait, workers, way_out)
        limit = obs.thresholds.max_core_wait
        if wait.down and wait.waited > limit:
            level, text = Level.FAIL, f"{text} (down longer than the failover goal, {limit:.0f} s)"
        else:
            level = Level.WARN
        out.append(CheckResult("jobs", f"{wait.job}/capacity", level, text))
    return out


def check_cluster_capacity(obs: HealthInputs) -> list[CheckResult]:
    """Free cores per worker, and whether N+1 holds for the declared jobs (nothing when no
    job's spec is known)."""
    if not obs.needs:
        return []
    workers = nodes(obs)
    check = spare_check(workers, [obs.needs[n] for n in obs.jobs if n in obs.needs])
    free = free_text(workers)
    if check.ok:
        return [CheckResult("cluster", "capacity", Level.OK, f"{check.summary()}; {free}")]
    return [CheckResult("cluster", "capacity", Level.WARN,
                        f"{check.summary()}; add a worker (`{add_worker_command(obs)}`); "
                        f"{free}")]  # fmt: skip
