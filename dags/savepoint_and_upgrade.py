"""
# savepoint_and_upgrade

Upgrade a running job to a new version without losing or double-counting events:

1. **validate** the params, and admission: the cluster must still hold every job with the new
   version after losing its largest worker (N+1), else the run fails here naming the
   shortfall (param `allow_no_spare`: warned instead);
2. **plan**: compare the running stages with the new version's, by name (printed in the task
   log). An incompatible plan fails the run here and the running job is untouched;
3. **start standby** (param `standby`: `warm`, or `auto` when a worker has a free core for the
   new version's driver; `cold` skips it): the new version's driver is started beside the old
   one, its session up, stages built and validated, executors warmed up, and waits. The gap is
   then only the savepoint and the restore (seconds instead of a driver's start). A standby
   that does not come up fails the run here, the old version untouched; if the savepoint
   fails, **abort standby** kills it;
4. **savepoint with cancel**: the job drains to a batch boundary, copies and verifies its
   checkpoints and stops its queries. If the cluster has free cores for the new version
   beside it, it hands over: it gives up the job's lease with its answer and idles until
   the new version runs (its shutdown does not compete with the new version's first
   batches); else it shuts down at once;
5. **start** the new version from the savepoint at once, or release the standby (restored
   stages keep their state, new ones start at the savepoint's source positions);
6. **verify**: wait until it is healthy. If it is not, **roll back**: the old version is
   restarted from the same savepoint and the run fails with the reason.

Each task runs one step of `streamops.procedures.upgrade_steps`, the steps `streamops upgrade` runs
in a loop. The upgrade's intent (`jobs/<job>/upgrade.json`: both specs by value, the savepoint,
the plan, the standby, the drivers, the steps done) is saved after every step, so a retried
task resumes instead of repeating harm. The new spec file is read once, by **validate**: the
version planned is the version started.
"""

from __future__ import annotations

from airflow.sdk import Param, dag, task

from streamops.world.standby import STANDBY_MODES
from streamops_airflow.dag_defaults import manual_dag, spare_param
from streamops_airflow.upgrade_groups import (
    abort_standby,
    plan,
    savepoint_with_cancel,
    start_new_version,
    start_standby,
    verify,
)


@dag(
    doc_md=__doc__,
    **manual_dag("jobs", "upgrade"),
    params={
        "job": Param("fleet-pings", type="string", minLength=1, title="Job",
                     description="name of the running job to upgrade"),
        "spec": Param("fleet-pings-v2.yaml", type="string", minLength=1, title="New version",
                      description="spec YAML of the new version (config/jobs/ or absolute)"),
        "savepoint": Param("", type=["string", "null"], title="Savepoint name",
                           description="name of the savepoint to take (empty: generated)"),
        "allow_state_drop": Param(False, type="boolean", title="Allow state drop",
                                  description="allow removing (or renaming) stateful stages"),
        "standby": Param("auto", type="string", enum=list(STANDBY_MODES), title="Warm standby",
                         description="warm: start the new version's driver before the old one "
                                     "stops; cold: after; auto: warm if a worker has a free "
                                     "core for it"),
        "allow_no_spare": spare_param(),
        "now": Param(False, type="boolean", title="Now",
                     description="go at once: do not wait for (or be refused by) the backlog "
                     "of a job whose spec declares latency_slo"),
    },  # fmt: skip
)
def savepoint_and_upgrade() -> None:
    @task(multiple_outputs=True)
    def validate(params: dict | None = None) -> dict:
        from streamops_airflow import params as checks
        from streamops_airflow.exceptions import ParamError
        from streamops_airflow.hooks import ops_settings

        params = params or {}
        settings = ops_settings()
        job = checks.known_job(params, "job", settings)
        path, spec = checks.job_spec(params, "spec", settings)
        if spec.name != job:
            raise ParamError("spec", f"{path} is job {spec.name}, not a version of {job}")
        checks.admitted(params, settings, f"upgrade of {job} to v{spec.version}", specs=[spec])
        return {
            "job": job, "spec_path": str(path), "spec": spec.model_dump(mode="json"),
            "savepoint": checks.new_savepoint_name(params, "savepoint", settings),
            "allow_state_drop": bool(params.get("allow_state_drop")),
            "standby": checks.one_of(params, "standby", STANDBY_MODES, default="auto"),
            "now": bool(params.get("now")),
        }  # fmt: skip

    ctx = plan(validate())
    ready = start_standby(ctx)
    started = start_new_version(ctx)
    savepoint = savepoint_with_cancel(ctx, ready)
    [ready, savepoint] >> started
    savepoint >> abort_standby.override(task_id="abort_standby")(ctx.operator.task_id)
    verify(ctx, started)


savepoint_and_upgrade()
