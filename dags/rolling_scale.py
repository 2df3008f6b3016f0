"""
# rolling_scale

Scale the Spark workers while the jobs keep running, every cluster step through the node
agents. Give **either** a target worker count **or** a worker node to add or remove:

1. **validate**: exactly one of `workers` (≥ 1), `add`, `remove`; the node has an agent;
2. **mark_batches**: each running job's last committed batch, per stage;
3. **change_workers**: start idle workers (spare agents) or gracefully decommission workers
   (SIGPWR: executors drain, then stop), one at a time, preferring workers without a driver;
4. **confirm_in_master**: the master lists exactly the expected ALIVE workers;
5. **verify_batches_continue**: every job committed new batches after the change;
6. **rebalance**: a job granted fewer cores than it asks for while cores are free is
   restarted from a fresh savepoint so it uses the new workers (usually nothing to do).

The run records its intent (`<state>/cluster/intents/scale.json`, owned by the run) before a
worker changes and after each step, and the count reached once the master confirms it: the
health check expects that many workers, and shows an unfinished scale with its run.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from airflow.sdk import Param, dag, task

from streamops_airflow.dag_defaults import manual_dag


@dag(
    doc_md=__doc__,
    **manual_dag("cluster", "scale", retry_delay_s=15),
    params={
        "workers": Param(None, type=["null", "integer"], title="Target workers",
                         description="number of ALIVE workers wanted (1 or more); leave empty "
                         "to add or remove one named worker instead"),
        "add": Param(None, type=["null", "string"], title="Add worker",
                     description="worker node to start, e.g. worker-3 (its agent must run)"),
        "remove": Param(None, type=["null", "string"], title="Remove worker",
                        description="worker node to decommission gracefully, e.g. worker-3"),
        "verify_timeout": Param(300, type="integer", minimum=30, title="Verify timeout (s)",
                                description="how long the jobs get to commit new batches"),
    },  # fmt: skip
)
def rolling_scale() -> None:
    @task(retries=0)
    def validate(params: dict | None = None) -> dict:
        from streamops.agent.registry import Agents
        from streamops_airflow import params as checks
        from streamops_airflow.exceptions import ParamError
        from streamops_airflow.hooks import ops_settings

        params = params or {}
        given = [k for k in ("workers", "add", "remove") if params.get(k) not in (None, "")]
        if len(given) != 1:
            raise ParamError("workers", "give exactly one of workers, add, remove (got "
                             f"{', '.join(given) or 'none'})")
        action = given[0]
        known = Agents(ops_settings()).workers()
        if action == "workers":
            count = checks.positive_int(params, "workers")
            if count > len(known):
                raise ParamError("workers", f"{count} workers wanted but only {len(known)} "
                                 f"worker nodes have an agent ({', '.join(known) or 'none'})")
            return {"action": action, "workers": count}
        node = checks.safe_name(params, action)
        if node not in known:
            raise ParamError(action, f"no agent serves worker node '{node}' (worker nodes: "
                             f"{', '.join(known) or 'none'})")
        return {"action": action, "node": node}

    @task
    def mark_batches() -> dict:
        from streamops.procedures import scale
        from streamops_airflow.hooks import ops_settings

        return scale.batch_marks(ops_settings())

    @task(retries=0)
    def change_workers(plan: dict) -> int:
        from streamops.procedures import scale
        from streamops_airflow.hooks import ops_settings

        settings, owner = ops_settings(), _owner()
        node = plan.get("node")
        target = scale.target_workers(settings, workers=plan.get("workers"),
                                      add=node if plan["action"] == "add" else None,
                                      remove=node if plan["action"] == "remove" else None)
        scale.begin(settings, owner, target)
        with _recorded(settings, owner, "change_workers"):
            if plan["action"] == "workers":
                result = scale.scale_to(settings, plan["workers"])
            elif plan["action"] == "add":
                result = scale.add_worker(settings, plan["node"])
            else:
                result = scale.remove_worker(settings, plan["node"])
        print(result.summary())
        return len(result.running)

    @task
    def confirm_in_master(expected: int) -> None:
        from streamops.procedures import scale
        from streamops_airflow.hooks import ops_settings

        settings, owner = ops_settings(), _owner()
        with _recorded(settings, owner, "confirm_in_master"):
            scale.wait_alive_count(settings, expected)
        scale.workers_changed(settings, owner)  # health expects this many workers from now on
        scale.step_done(settings, owner, "confirm_in_master")

    @task
    def verify_batches_continue(marks: dict, params: dict | None = None) -> dict:
        from streamops.procedures import scale
        from streamops_airflow.hooks import ops_settings

        settings, owner = ops_settings(), _owner()
        timeout = float((params or {}).get("verify_timeout") or 300)
        with _recorded(settings, owner, "verify_batches_continue"):
            batches = scale.verify_batches_continue(settings, _marks(marks), timeout)
        scale.step_done(settings, owner, "verify_batches_continue")
        print(f"batches after the scale: {batches}")
        return batches

    @task
    def rebalance() -> list[str]:
        from streamops.procedures import scale
        from streamops_airflow.hooks import ops_settings

        settings, owner = ops_settings(), _owner()
        with _recorded(settings, owner, "rebalance"):
            jobs = scale.rebalance_candidates(settings)
            for job in jobs:
                print(f"job {job} cannot use the free cores; restarting it from a savepoint")
                scale.rebalance(settings, job)
        if not jobs:
            print("every job uses the cores it asks for; no rebalance needed")
        scale.step_done(settings, owner, "rebalance")
        scale.finish(settings, owner)
        return jobs

    marks = mark_batches()
    plan = validate()
    plan >> marks
    running = change_workers(plan)
    marks >> running
    confirmed = confirm_in_master(running)
    confirmed >> verify_batches_continue(marks) >> rebalance()


def _owner() -> str:
    """This DAG run, the owner of its scale's intent."""
    from airflow.sdk import get_current_context

    from streamops_airflow.operators import run_owner

    return run_owner(get_current_context())


@contextmanager
def _recorded(settings: Any, owner: str, step: str) -> Iterator[None]:
    """Run a step; its failure is kept in the scale's intent (health shows it)."""
    from streamops.exceptions import StreamopsError
    from streamops.procedures import scale

    try:
        yield
    except StreamopsError as exc:
        scale.record_failure(settings, owner, f"step {step} failed: {exc}")
        raise


def _marks(raw: dict) -> dict:
    """Batch marks back from XCom (JSON turned the (batch, time) tuples into lists)."""
    return {job: {stage: tuple(mark) for stage, mark in stages.items()}
            for job, stages in raw.items()}


rolling_scale()
