"""Operators: submit a streaming job (``spark-submit``, cluster mode).

Why :class:`StreamingSparkSubmitOperator` does not use the provider's driver tracking:
``SparkSubmitOperator`` in standalone cluster mode polls the driver until it *finishes*
(a streaming driver never does, so the task would never end) and, depending on the provider
version, polls with ``spark-submit --status`` against ``spark://host:7077``, the master's RPC
port, which does not speak HTTP (apache/airflow#71881, #46334). So this operator keeps the
provider's ``spark-submit`` process handling and driver-id parsing (``SparkSubmitHook.submit``)
and replaces tracking with the job registry: the task ends when every stage of the job has
committed a batch (or is idle), deferring to :class:`JobHealthyTrigger` when ``deferrable``.
It forces Spark's RPC submission client (``spark.master.rest.enabled=false``): the REST client
would derive an HTTP address from ``spark://host:7077`` and fail the same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook
from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.sdk import Context

from streamops.cluster import rpc_auth
from streamops.cluster.spark_home import check_spark_install
from streamops.cluster.submission import Submission
from streamops.exceptions import JobAlreadyRunning, JobBusy, JobError, StreamopsError
from streamops.procedures.deploy import start_job
from streamops.procedures.job_lease import acting_as
from streamops.settings import Settings
from streamops.spec import load_spec
from streamops.timeouts import HEALTH_TIMEOUT
from streamops_airflow import hooks
from streamops_airflow.exceptions import JobNotHealthy, ProcedureFailed
from streamops_airflow.hooks import SparkStandaloneHook
from streamops_airflow.procedure_tasks import lease_run, run_owner
from streamops_airflow.triggers import defer_until_healthy, health_outcome

__all__ = ["StandaloneClusterSubmitHook", "StreamingSparkSubmitOperator", "run_owner"]


class StandaloneClusterSubmitHook(SparkSubmitHook):
    """``SparkSubmitHook`` for one job submission to a standalone master in cluster mode.

    The command line is :meth:`Submission.spark_submit_args` (the same description the REST
    path renders), the connection comes from :class:`SparkStandaloneHook`'s settings, and the
    driver id is parsed from ``spark-submit``'s output by the provider. Driver tracking is
    refused: a streaming driver is healthy long before it ends.
    """

    def __init__(self, submission: Submission, settings: Settings, spark_submit: Path) -> None:
        self._submission = submission
        self._settings = settings
        self._spark_submit = spark_submit
        super().__init__(name=submission.job, deploy_mode="cluster")

    def _resolve_connection(self) -> dict[str, Any]:
        return {
            "master": self._settings.master_url, "deploy_mode": "cluster", "queue": None,
            "spark_binary": str(self._spark_submit), "namespace": None, "principal": None,
            "keytab": None, "rest_scheme": "http", "rest_port": self._settings.rest_port,
            "rest_endpoint": self._settings.rest_url,
        }  # fmt: skip

    def _build_spark_submit_command(self, application: str) -> list[str]:
        command = [str(self._spark_submit), "--conf", "spark.master.rest.enabled=false"]
        auth = rpc_auth.submit_properties_file(self._settings)
        if auth is not None:  # the RPC secret: in a file, never on the command line
            command += ["--properties-file", str(auth)]
        command += self._submission.spark_submit_args()
        self.log.info("spark-submit command: %s", self._mask_cmd(command))
        return command

    def _start_driver_status_tracking(self) -> None:
        raise ProcedureFailed("a streaming driver is tracked by health, not until it finishes")


class StreamingSparkSubmitOperator(SparkSubmitOperator):
    """Submit the job of ``spec_path`` as a supervised cluster-mode driver via ``spark-submit``:
    the deploy procedure :func:`streamops.procedures.deploy.start_job` (the CLI's ``submit``
    too: the hot standby of a ``standby: hot`` spec is submitted beside it), its transport
    ``spark-submit``.

    Refuses (fails at once) when a live instance of the job exists. The deploy's intent
    ``jobs/<job>/deploy.json`` lets a retried task wait for the driver it submitted instead of
    failing on it. With ``wait_for_healthy`` the task ends when the job is healthy. Returns the
    driver id.
    """

    template_fields: Sequence[str] = ("spec_path",)

    def __init__(
        self, *, spec_path: str,
        spark_standalone_conn_id: str = SparkStandaloneHook.default_conn_name,
        wait_for_healthy: bool = True, health_timeout: float = HEALTH_TIMEOUT,
        deferrable: bool = False, poll_interval: float = 5.0, **kwargs: Any,
    ) -> None:  # fmt: skip
        super().__init__(**kwargs)
        self.spec_path = spec_path
        self.spark_standalone_conn_id = spark_standalone_conn_id
        self.wait_for_healthy = wait_for_healthy
        self.health_timeout = health_timeout
        self.deferrable = deferrable
        self.poll_interval = poll_interval

    def execute(self, context: Context) -> str | None:
        cluster = SparkStandaloneHook(self.spark_standalone_conn_id)
        settings = cluster.settings
        try:
            spec = load_spec(self.spec_path)
        except StreamopsError as exc:
            raise ProcedureFailed(str(exc)) from exc
        try:
            with acting_as("dag", lease_run(context)):  # the job's operation lease: this run's
                driver_id = start_job(hooks.ops_operations(self.spark_standalone_conn_id), spec,
                                      owner=run_owner(context), transport=self._spark_submit)
        except (JobAlreadyRunning, JobBusy) as exc:
            raise ProcedureFailed(str(exc)) from exc
        if not self.wait_for_healthy:
            return driver_id
        if self.deferrable:
            defer_until_healthy(
                self, settings, spec.name, timeout=self.health_timeout, since_driver=driver_id,
                poll_interval=self.poll_interval,
            )  # fmt: skip
        try:
            cluster.registry.wait_healthy(spec.name, timeout=self.health_timeout,
                                          since_driver=driver_id)  # fmt: skip
        except JobError as exc:
            raise JobNotHealthy(str(exc)) from exc
        return driver_id

    def _spark_submit(self, submission: Submission) -> str:
        """The transport of the submissions: ``spark-submit`` (RPC client); the driver id."""
        cluster = SparkStandaloneHook(self.spark_standalone_conn_id)
        spark_submit = check_spark_install().home / "bin" / "spark-submit"
        self._hook = StandaloneClusterSubmitHook(submission, cluster.settings, spark_submit)
        driver_id = self._hook.submit(str(submission.app_resource))
        if not driver_id:
            raise ProcedureFailed(f"spark-submit printed no driver id for job {submission.job}")
        return str(driver_id)

    def execute_complete(self, context: Context, event: dict[str, Any]) -> str | None:
        """A failed start is retryable here: the retry replaces this run's failed driver."""
        return health_outcome(event, JobNotHealthy)

    def on_kill(self) -> None:
        """Stop a running ``spark-submit`` client only; never kill the streaming driver."""
        process = getattr(self._hook, "_submit_sp", None) if self._hook else None
        if process is not None and process.poll() is None:
            self.log.info("killing the spark-submit client (pid %s)", process.pid)
            process.kill()
