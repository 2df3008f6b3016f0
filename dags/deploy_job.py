"""
# deploy_job

Deploy a streaming job: **validate spec → submit → wait healthy**.

The job runs as one supervised cluster-mode driver (`spark-submit --deploy-mode cluster
--supervise`), with its hot standby beside it for a `standby: hot` spec: the deploy of
`streamops.procedures.deploy.start_job`, the one `streamops submit` runs too. The submit
task ends when the job is *healthy* (every stage committed a batch or is idle), not when the
streaming driver ends; the wait is deferred to the triggerer.

A second live instance of the same job name is refused with a clear error: cancel it first,
or use `savepoint_and_upgrade` to change its version.

**Params**: `spec` (a job spec YAML under `config/jobs/`, or an absolute path);
`allow_no_spare` (the validate task refuses a job the cluster would not hold after losing its
largest worker, N+1, naming the shortfall; true: warned instead).
"""

from __future__ import annotations

from airflow.sdk import Param, dag, task

from streamops_airflow.dag_defaults import manual_dag, spare_param
from streamops_airflow.operators import StreamingSparkSubmitOperator


@dag(
    doc_md=__doc__,
    **manual_dag("jobs"),
    params={
        "spec": Param(
            "fleet-pings.yaml", type="string", minLength=1, title="Job spec",
            description="YAML file under config/jobs/ (e.g. fleet-pings.yaml) or absolute path",
        ),
        "allow_no_spare": spare_param(),
    },  # fmt: skip
)
def deploy_job() -> None:
    @task(multiple_outputs=True)
    def validate(params: dict | None = None) -> dict:
        from streamops_airflow import params as checks
        from streamops_airflow.hooks import ops_settings

        params, settings = params or {}, ops_settings()
        path, spec = checks.job_spec(params, "spec", settings)
        checks.admitted(params, settings, f"submit of {spec.name} v{spec.version}",
                        specs=[spec])  # fmt: skip
        return {"job": spec.name, "version": spec.version, "spec_path": str(path)}

    ctx = validate()
    StreamingSparkSubmitOperator(
        task_id="submit", spec_path=ctx["spec_path"], deferrable=True, health_timeout=300,
    )  # fmt: skip


deploy_job()
