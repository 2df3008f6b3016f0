"""
# cluster_restart

Graceful full-cluster restart that switches the classpath jar release (Jet's lossless
restart), step by step, every cluster step through the node agents:

1. **validate**: the release exists under `config/jars/releases`;
2. **begin**: record the intent (`<state>/cluster/intents/cluster-restart.json`): from/to
   release, running jobs, running workers, this run as its owner (an unfinished restart to
   the same release resumes; until it is done or rolled back, `streamops health` fails naming
   it and this run);
3. **savepoint_all_jobs**: savepoint every running job with cancel (one task per job);
4. **stop_cluster**: stop the workers, then the master;
5. **switch_release**: make the release active on every node (`<state>/lib/active`);
6. **start_cluster**: start the master, then the same workers;
7. **restore_all_jobs**: start every job from its savepoint, wait until healthy; the log
   shows the release each job now runs with (`classpath_release` in its status);
8. **roll_back** (only on failure): stop, switch back to the old release, start, restore
   every job from the same savepoints; the run fails with the reason.

Each step records intent before it acts, so a retried task resumes rather than repeats harm.
"""

from __future__ import annotations

from airflow.sdk import Param, dag, task

from streamops.procedures import cluster_restart as procedure
from streamops_airflow.cluster_groups import (
    restart_step,
    restore_all_jobs,
    roll_back_restart,
    savepoint_all_jobs,
)
from streamops_airflow.dag_defaults import manual_dag
from streamops_airflow.procedure_tasks import this_run


@dag(
    doc_md=__doc__,
    **manual_dag("cluster", "restart", "jars", retry_delay_s=15),
    params={
        "release": Param("r2", type="string", minLength=1, title="Jar release",
                         description="classpath jar release to switch to (a directory under "
                         "config/jars/releases, e.g. r1, r2)"),
    },  # fmt: skip
)
def cluster_restart() -> None:
    @task(retries=0)
    def validate(params: dict | None = None) -> str:
        from streamops_airflow import params as checks
        from streamops_airflow.hooks import ops_settings

        return checks.known_release(params or {}, "release", ops_settings())

    @task
    def begin(release: str) -> dict:
        # the run owns the intent: health names it while the restart is unfinished
        intent = restart_step(procedure.begin, release=release, owner=this_run())
        print(f"restart {intent.release_from} -> {intent.release_to}: jobs "
              f"{sorted(intent.savepoints)}, workers {intent.workers}")
        return {"from": intent.release_from, "to": intent.release_to}

    @task(trigger_rule="none_failed")
    def stop_cluster() -> None:
        restart_step(procedure.stop_cluster)

    @task
    def switch_release() -> None:
        restart_step(procedure.switch_release)

    @task
    def start_cluster() -> None:
        restart_step(procedure.start_cluster)

    begun = begin(validate())
    saved = savepoint_all_jobs()
    stopped = stop_cluster()
    switched = switch_release()
    started = start_cluster()
    healthy = restore_all_jobs()
    begun >> saved >> stopped >> switched >> started >> healthy
    [begun, saved, stopped, switched, started, healthy] >> roll_back_restart()


cluster_restart()
