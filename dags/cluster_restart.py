"""
# cluster_restart

Graceful cluster restart that switches the classpath jar release (Jet's lossless restart),
step by step, every cluster step through the node agents. Two paths (param `path`):
**warm** (the default while jobs run: the release switched under the running master and
workers, each job handed over to a standby that starts on it, a gap of seconds) and
**full** (the default with no job, or when asked: everything stopped and started, for a
change the master and workers load themselves). The `begin` task's log says which ran.

1. **validate**: the release exists under `config/jars/releases`, the path is auto, warm
   or full;
2. **begin**: record the intent (`<state>/cluster/intents/cluster-restart.json`): from/to
   release, the path, running jobs, running workers, this run as its owner (an unfinished
   restart to the same release resumes on its path; until it is done or rolled back,
   `streamops health` fails naming it and this run);
3. **choose_path**: follow `warm_path` or `full_path`;

Warm path, **hand_over_all_jobs**: switch the release on every node, hand every job over
(a warm upgrade to its own spec: its standby up on the new release, savepoint with cancel,
restore; one task per job), then wait until each is healthy and reports the new release.

Full path:

3. **savepoint_all_jobs**: savepoint every running job with cancel (one task per job);
4. **stop_cluster**: stop the workers, then the master;
5. **switch_release**: make the release active on every node (`<state>/lib/active`);
6. **start_cluster**: start the master, then the same workers;
7. **restore_all_jobs**: start every job from its savepoint, wait until healthy; the log
   shows the release each job now runs with (`classpath_release` in its status);
8. **roll_back** (only on failure): full path: stop, switch back to the old release, start,
   restore every job from the same savepoints; warm path: switch back, hand over again
   every job started during the restart; the run fails with the reason.

Each step records intent before it acts, so a retried task resumes rather than repeats harm.
"""

from __future__ import annotations

from typing import Any

from airflow.sdk import Param, dag, task

from streamops.procedures import cluster_restart as procedure
from streamops_airflow.cluster_groups import (
    hand_over_all_jobs,
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
        "path": Param("auto", type="string", title="Path",
                      description="auto: warm while jobs run (each job handed over to a "
                      "standby on the new release, the cluster runs on), full when none does; "
                      "warm; full: stop and start everything (for a change the master and "
                      "workers load themselves)"),
        "now": Param(False, type="boolean", title="Now",
                     description="go at once: do not wait for (or be refused by) the backlog "
                     "of a job whose spec declares latency_slo"),
    },  # fmt: skip
)
def cluster_restart() -> None:
    @task(retries=0)
    def validate(params: dict | None = None) -> dict[str, Any]:
        from streamops_airflow import params as checks
        from streamops_airflow.hooks import ops_settings

        given = params or {}
        return {"release": checks.known_release(given, "release", ops_settings()),
                "path": checks.one_of(given, "path", procedure.PATHS, default="auto"),
                "now": bool(given.get("now"))}

    @task
    def begin(asked: dict[str, Any]) -> str:
        # the run owns the intent: health names it while the restart is unfinished
        intent = restart_step(procedure.begin, release=asked["release"], owner=this_run(),
                              path=asked["path"], now=bool(asked.get("now")))  # fmt: skip
        print(f"restart {intent.release_from} -> {intent.release_to} by the {intent.path} "
              f"path: jobs {sorted(intent.savepoints)}, workers {intent.workers}")
        return intent.path

    @task.branch
    def choose_path(path: str) -> str:
        return "warm_path" if path == "warm" else "full_path"

    @task
    def warm_path() -> None:
        """The jobs are handed over; the master and the workers run on."""

    @task
    def full_path() -> None:
        """Every job saved and stopped, the whole cluster stopped and started."""

    # after the savepoints, or with none (no job: nothing mapped) on the full path; never on
    # the warm one (all its upstream skipped)
    @task(trigger_rule="none_failed_min_one_success")
    def stop_cluster() -> None:
        restart_step(procedure.stop_cluster)

    @task
    def switch_release() -> None:
        restart_step(procedure.switch_release)

    @task
    def start_cluster() -> None:
        restart_step(procedure.start_cluster)

    begun = begin(validate())
    chosen = choose_path(begun)
    warm, full = warm_path(), full_path()
    handed = hand_over_all_jobs()
    chosen >> [warm, full]
    warm >> handed
    saved = savepoint_all_jobs()
    stopped = stop_cluster()
    switched = switch_release()
    started = start_cluster()
    healthy = restore_all_jobs()
    full >> saved >> stopped >> switched >> started >> healthy
    full >> stopped
    [begun, handed, saved, stopped, switched, started, healthy] >> roll_back_restart()


cluster_restart()
