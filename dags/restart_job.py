"""
# restart_job

Restart a job by hand, in one of two modes:

- **savepoint** (graceful): savepoint with cancel → start the same spec from it → wait
  healthy. The job resumes exactly at the savepoint.
- **last-checkpoint** (for a job too sick to savepoint): cancel it (or find it dead) →
  resubmit the same spec → wait healthy. Its stages resume from their own checkpoints; the
  sinks are keyed, so a replayed batch changes nothing.

"The same spec" is the spec of the job's last submission. Each task runs (or polls) one step
of the ops library's procedure, whose intent `jobs/<job>/restart.json` is recorded before
each destructive step: a retried task resumes, it never cancels or submits twice. A step
that fails before the job is stopped (its savepoint failed, a full disk say, and the driver
runs on) closes that intent as failed, as the CLI does: the run fails saying the job still
runs, and the next run begins afresh.
"""

from __future__ import annotations

from airflow.sdk import Param, dag, task

from streamops_airflow.dag_defaults import manual_dag
from streamops_airflow.job_groups import (
    last_checkpoint,
    savepoint_with_cancel,
    start_same_version,
    verify,
)


@dag(
    doc_md=__doc__,
    **manual_dag("jobs", "restart"),
    params={
        "job": Param("fleet-pings", type="string", minLength=1, title="Job",
                     description="name of the job to restart"),
        "mode": Param("savepoint", type="string", enum=["savepoint", "last-checkpoint"],
                      title="Mode", description="savepoint: graceful; last-checkpoint: for a "
                      "job too sick to savepoint (or already dead)"),
        "now": Param(False, type="boolean", title="Now",
                     description="go at once: do not wait for (or be refused by) the backlog "
                     "of a job whose spec declares latency_slo"),
    },  # fmt: skip
)
def restart_job() -> None:
    @task(multiple_outputs=True)
    def validate(params: dict | None = None) -> dict:
        from streamops.exceptions import JobError, StreamopsError
        from streamops.procedures.restart import (
            check_mode,
            hold_restart,
            restart_savepoint_name,
            timed_to_backlog,
        )
        from streamops_airflow import params as checks
        from streamops_airflow.exceptions import ParamError
        from streamops_airflow.hooks import ops_settings
        from streamops_airflow.procedure_tasks import job_step

        params = params or {}
        settings = ops_settings()
        job = checks.known_job(params, "job", settings)
        try:
            mode = check_mode(str(checks.require(params, "mode")))
        except StreamopsError as exc:
            raise ParamError("mode", str(exc)) from exc
        # before anything stops: a job with a latency_slo waits for its backlog, or is refused
        if not params.get("now") and timed_to_backlog(settings, job):
            job_step(hold_restart, job, now=False, fatal=(JobError,))
        return {"job": job, "mode": mode, "savepoint": restart_savepoint_name(job)}

    @task.branch
    def choose(ctx: dict) -> str:
        if ctx["mode"] == "savepoint":
            return "savepoint_with_cancel.begin"
        return "stop"

    ctx = validate()
    branch = choose(ctx)

    graceful = savepoint_with_cancel(ctx)
    started = start_same_version(ctx)
    branch >> graceful >> started
    verify(ctx, started)

    branch >> last_checkpoint(ctx)


restart_job()
