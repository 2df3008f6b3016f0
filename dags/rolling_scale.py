"""
# rolling_scale

Scale the Spark workers while the jobs keep running, every cluster step through the node
agents. Give **either** a target worker count **or** a worker node to add or remove:

1. **validate**: exactly one of `workers` (≥ 1), `add`, `remove`; the node has an agent; a
   scale-down must leave a cluster that holds every job after losing its largest worker
   (N+1), else the run fails here naming the shortfall (param `allow_no_spare`: warned);
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

from airflow.sdk import Param, dag, task

from streamops.procedures import scale
from streamops.timeouts import VERIFY_BATCHES_TIMEOUT
from streamops_airflow.dag_defaults import manual_dag, spare_param
from streamops_airflow.procedure_tasks import run_step, this_run


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
        "allow_no_spare": spare_param(),
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
            checks.admitted(params, ops_settings(), f"scale to {count}", workers=count)
            return {"action": action, "workers": count}
        node = checks.safe_name(params, action)
        if node not in known:
            raise ParamError(action, f"no agent serves worker node '{node}' (worker nodes: "
                             f"{', '.join(known) or 'none'})")
        if action == "remove":
            checks.admitted(params, ops_settings(), f"removing worker {node}", remove=[node])
        return {"action": action, "node": node}

    @task
    def mark_batches() -> dict:
        return run_step(scale.batch_marks)

    @task(retries=0)
    def change_workers(plan: dict, marks: dict) -> int:
        node = plan.get("node")
        result = run_step(scale.change_workers, this_run(), workers=plan.get("workers"),
                          add=node if plan["action"] == "add" else None,
                          remove=node if plan["action"] == "remove" else None,
                          marks=marks)  # fmt: skip
        print(result.summary())
        return len(result.running)

    @task
    def confirm_in_master(expected: int) -> None:
        run_step(scale.confirm_in_master, this_run(), expected)

    @task
    def verify_batches_continue(params: dict | None = None) -> dict:
        timeout = float((params or {}).get("verify_timeout") or VERIFY_BATCHES_TIMEOUT)
        batches = run_step(scale.verify_batches_continue, this_run(), timeout)
        print(f"batches after the scale: {batches}")
        return batches

    @task
    def rebalance() -> list[str]:
        jobs = run_step(scale.rebalance, this_run())
        print(f"rebalanced (restarted from a savepoint to use the free cores): {jobs}" if jobs
              else "every job uses the cores it asks for; no rebalance needed")
        return jobs

    plan = validate()
    marks = mark_batches()
    plan >> marks
    confirmed = confirm_in_master(change_workers(plan, marks))
    confirmed >> verify_batches_continue() >> rebalance()


rolling_scale()
