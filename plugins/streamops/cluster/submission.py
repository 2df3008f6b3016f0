"""Submitting to the cluster: what a driver of a job is and how the master is asked to run it.

:func:`build_submission` turns a :class:`JobSpec` into a :class:`Submission`, the single
description of what runs; it renders both as a REST ``CreateSubmissionRequest`` (used by the
CLI, no JVM needed) and as ``spark-submit`` arguments (used by Airflow's
``SparkSubmitOperator``), so the two paths cannot drift apart.

This is the submission client that both sides share: the operator's procedures
(:mod:`streamops.world.submit`, which adds the job registry's checks and waits) and a
running hot driver that submits its own standby (``spark_jobs/runtime/hot_standby.py``).
"""

from __future__ import annotations

import importlib.util
import logging
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from streamops import job_code
from streamops.cluster import rpc_auth
from streamops.cluster.class_archives import ClassArchives
from streamops.cluster.client import MasterClient, submission_request
from streamops.cluster.launcher_jar import ensure_launcher_jar
from streamops.cluster.local_fs import with_local_fs
from streamops.cluster.metrics_conf import metrics_properties
from streamops.cluster.spark_home import check_spark_install
from streamops.exceptions import JobError
from streamops.settings import Settings
from streamops.spec import JobSpec, encode_spec
from streamops_contract.records import SubmissionRecord, append_record

log = logging.getLogger(__name__)

PYTHON_RUNNER = "org.apache.spark.deploy.PythonRunner"
CHECKPOINT_FILE_MANAGER = (
    "org.apache.spark.sql.execution.streaming.checkpointing.FileSystemBasedCheckpointFileManager"
)
DEFAULT_CONF = {
    "spark.sql.shuffle.partitions": "4",
    # report every trigger that finds no new data (Spark's default: at most one per 10 s), so
    # a stop or a savepoint with cancel knows at once that a drained stage will run no batch
    "spark.sql.streaming.noDataProgressEventInterval": "0ms",
    "spark.sql.streaming.minBatchesToRetain": "20",
    # Checkpoints and state files through Hadoop's FileSystem API, not its FileContext (Spark's
    # default): on a local path without Hadoop's native library, FileContext asks each file's
    # link status by running `readlink` in a child process, several times a batch in the
    # driver and in each executor. 12 % less CPU for an idle fleet-pings job, batches a fifth
    # shorter (docs/performance.md, "Checkpoints without a child process per file").
    "spark.sql.streaming.checkpointFileManagerClass": CHECKPOINT_FILE_MANAGER,
    "spark.ui.showConsoleProgress": "false",
}


def driver_script() -> Path:
    """Path of ``spark_jobs/main.py``, found without importing pyspark."""
    found = importlib.util.find_spec("spark_jobs")
    if found is None or not found.submodule_search_locations:
        raise JobError("the spark_jobs package is not installed; run the bootstrap step")
    return Path(next(iter(found.submodule_search_locations))) / "main.py"


@dataclass(frozen=True)
class Submission:
    """Everything the cluster needs to launch one driver of a job."""

    job: str
    version: str
    app_resource: Path
    app_args: tuple[str, ...]
    spark_properties: dict[str, str] = field(default_factory=dict)

    def rest_body(self, spark_version: str) -> dict[str, Any]:
        return submission_request(
            app_resource=f"file:{self.app_resource}",
            main_class=PYTHON_RUNNER,
            app_args=self.app_args,
            spark_properties=self.spark_properties,
            client_spark_version=spark_version,
        )

    def spark_submit_args(self) -> list[str]:
        """Arguments after ``spark-submit`` (``--conf`` for every property)."""
        props = dict(self.spark_properties)
        args = ["--master", props.pop("spark.master"), "--deploy-mode", "cluster"]
        args += ["--name", props.pop("spark.app.name"), "--class", PYTHON_RUNNER]
        if props.pop("spark.driver.supervise", "false") == "true":
            args.append("--supervise")
        props.pop("spark.submit.deployMode", None)
        for key in sorted(props):
            args += ["--conf", f"{key}={props[key]}"]
        return [*args, str(self.app_resource), *self.app_args]


def build_submission(
    spec: JobSpec, settings: Settings, *, extra_args: tuple[str, ...] = ()
) -> Submission:
    """The submission of ``spec``: PythonRunner runs ``spark_jobs/main.py`` in the driver;
    its JVMs map the cluster's class archives when they have been trained. A job's own code
    (``code``) is published to the state root first (:mod:`streamops.job_code`)."""
    spec = job_code.publish(spec, settings.layout)
    res = spec.resources
    props = {
        **DEFAULT_CONF,
        **metrics_properties(settings.config_dir),  # Prometheus on the driver's UI
        **rpc_auth.submission_properties(settings),  # the secret comes from the worker
        "spark.master": settings.master_url,
        "spark.app.name": spec.name,
        "spark.submit.deployMode": "cluster",
        "spark.driver.supervise": "true",
        "spark.driver.cores": str(res.driver_cores),
        "spark.driver.memory": res.driver_memory,
        "spark.executor.cores": str(spec.executor_cores),
        "spark.executor.memory": res.executor_memory,
        "spark.cores.max": str(res.max_cores),
        "spark.pyspark.python": settings.python,
        "spark.pyspark.driver.python": settings.python,
        **spec.conf,
    }
    # a hot job's driver may submit its standby itself (spark_jobs/runtime/placement.py)
    hot = ("--settings-b64", settings.to_b64()) if spec.standby == "hot" else ()
    app_args = (
        str(driver_script()),
        "",  # PythonRunner's second argument: extra py-files (none: main.py adds a job's code)
        "--spec-b64",
        encode_spec(spec),
        "--state-root",
        str(settings.state_root),
        *hot,
        *extra_args,
    )
    props = with_local_fs(props, settings.config_dir)  # no chmod process per checkpoint file
    jar = ensure_launcher_jar(settings.layout)
    props = ClassArchives.of(settings).apply(props)
    return Submission(spec.name, spec.version, jar, app_args, props)


def submit_hot_standby(
    spec: JobSpec, settings: Settings, client: MasterClient | None = None, *, moves: int = 0
) -> str:
    """Submit the hot standby of ``spec`` (``standby: hot``): a second supervised driver of
    the same version that waits for the running one, arms its stages and takes the job over
    when that driver dies (``spark_jobs/runtime/hot_standby.py``). Its driver id.

    It asks for one executor more than the job runs on: it keeps those apart from the running
    driver's worker and releases the others (``spark_jobs/runtime/placement.py``); ``moves``:
    how many standbys before it found themselves on the running driver's worker."""
    install = check_spark_install()
    client = client or MasterClient(settings)
    submission = hot_standby_submission(spec, settings, moves)
    driver_id = client.create_submission(submission.rest_body(install.version))
    record_submission(settings, spec, driver_id, hot_standby=True)
    return driver_id


def hot_standby_submission(spec: JobSpec, settings: Settings, moves: int = 0) -> Submission:
    """The submission of ``spec``'s hot standby: ``--hot-standby``, and one spare executor."""
    args = ("--hot-standby", "--standby-moves", str(moves))
    submission = build_submission(spec, settings, extra_args=args)
    spare = str(spec.resources.max_cores + spec.executor_cores)
    return replace(
        submission, spark_properties={**submission.spark_properties, "spark.cores.max": spare}
    )


def record_submission(
    settings: Settings, spec: JobSpec, driver_id: str, *, standby: bool = False,
    hot_standby: bool = False, token: str | None = None,
) -> None:  # fmt: skip
    """Append the submission to ``jobs/<job>/submissions.jsonl`` (how the registry finds it);
    a warm standby's ``token`` tells whether it was released (its go file)."""
    record = SubmissionRecord(driver_id, spec.version, spec.model_dump(mode="json"),
                              standby=standby, hot_standby=hot_standby, token=token or None)
    append_record(settings.layout.submissions_file(spec.name), record)
    role = " (its hot standby)" if hot_standby else ""
    log.info("job %s v%s submitted as driver %s%s", spec.name, spec.version, driver_id, role)
