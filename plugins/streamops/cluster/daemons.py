"""Spark daemons: the exact commands and environments of the master and the workers, and
their pid files under ``<state>/cluster/pids``.

Pure but for the pid files: what to run (:func:`master_spec`, :func:`worker_spec`); starting
and stopping them is generic to every process of the state root (:mod:`streamops.processes`:
:func:`~streamops.processes.launch`, :func:`~streamops.processes.stop_daemons`).
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Mapping
from dataclasses import asdict
from pathlib import Path

from streamops.cluster import rest_auth, rpc_auth
from streamops.cluster.metrics_conf import metrics_properties
from streamops.cluster.profile import ClusterProfile
from streamops.cluster.spark_home import SparkInstall
from streamops.processes import CLUSTER_MARKER, DAEMON_MARKER, DaemonSpec, PidRecord
from streamops.settings import Settings
from streamops.state.layout import StateLayout, read_record, write_json_atomic
from streamops_contract.names import check_name

log = logging.getLogger(__name__)

MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"

MASTER_NAME = "master"
WORKER_PREFIX = "worker-"

_WORKER_NAME = re.compile(r"^worker-([1-9][0-9]*)$")


# --- what to run -----------------------------------------------------------------------
def worker_name(index: int) -> str:
    return f"{WORKER_PREFIX}{index}"


def worker_index(name: str) -> int | None:
    """``3`` for ``worker-3``; ``None`` for a worker with a custom name."""
    match = _WORKER_NAME.match(name)
    return int(match.group(1)) if match else None


def format_java_opts(props: Mapping[str, str]) -> str:
    """``-Dk=v`` options as one ``SPARK_*_OPTS`` string (quoted as Spark's launcher parses)."""
    parts = []
    for key, value in props.items():
        opt = f"-D{key}={value}"
        if any(c.isspace() or c in "\"'\\" for c in opt):
            opt = '"' + opt.replace("\\", "\\\\").replace('"', '\\"') + '"'
        parts.append(opt)
    return " ".join(parts)


def master_properties(settings: Settings, profile: ClusterProfile) -> dict[str, str]:
    """System properties of the master: REST server on loopback, FILESYSTEM recovery."""
    return {
        "spark.master.rest.enabled": "true",
        "spark.master.rest.host": settings.master_host,
        "spark.master.rest.port": str(settings.rest_port),
        "spark.deploy.recoveryMode": "FILESYSTEM",
        "spark.deploy.recoveryDirectory": str(settings.layout.recovery_dir),
        **profile.master_properties,
    }


def worker_properties(profile: ClusterProfile) -> dict[str, str]:
    """System properties of a worker: graceful decommission on SIGPWR, app dir cleanup."""
    return {
        "spark.decommission.enabled": "true",
        "spark.worker.decommission.signal": "PWR",
        "spark.worker.cleanup.enabled": "true",
        "spark.worker.cleanup.interval": str(profile.worker_cleanup_interval),
        "spark.worker.cleanup.appDataTtl": str(profile.worker_cleanup_app_data_ttl),
        **profile.worker_properties,
    }


def base_env(settings: Settings, profile: ClusterProfile, install: SparkInstall) -> dict[str, str]:
    """Variables common to the master and the workers (drivers and executors inherit them)."""
    return {
        "SPARK_HOME": str(install.home),
        "SPARK_CONF_DIR": str(settings.config_dir / "spark"),
        # log4j's configuration by path, not from the classpath: the workers' SPARK_CONF_DIR
        # (first on the classpath of the JVMs they launch) is empty (worker_spec)
        "LOG4J_CONFIGURATION_FILE": str(settings.config_dir / "spark" / "log4j2.properties"),
        "SPARK_LOCAL_IP": settings.local_host,
        "SPARK_DAEMON_MEMORY": profile.daemon_memory,
        "PYSPARK_PYTHON": settings.python,
        # The cluster's extra classpath: Spark's launcher appends SPARK_DIST_CLASSPATH to the
        # classpath of every JVM it builds, so drivers and executors a worker launches load
        # the active jar release (whichever way they were submitted: REST or spark-submit).
        "SPARK_DIST_CLASSPATH": f"{settings.layout.active_release_link}/*",
        CLUSTER_MARKER: str(settings.layout.root),
    }


def master_spec(settings: Settings, profile: ClusterProfile, install: SparkInstall) -> DaemonSpec:
    argv: tuple[str, ...] = (
        str(install.spark_class), MASTER_CLASS,
        "--host", settings.master_host,
        "--port", str(settings.master_port),
        "--webui-port", str(settings.master_webui_port),
    )
    auth = {**rest_auth.master_properties(settings), **rpc_auth.daemon_properties(settings)}
    if auth:  # the REST server's key and the RPC secret: in a file, never on the command line
        path = settings.layout.cluster_dir / "master-auth.properties"
        argv = (*argv, "--properties-file", str(rest_auth.write_properties(path, auth, settings)))
    env = base_env(settings, profile, install)
    if jar := rest_auth.master_classpath(settings):  # the REST server's token filter
        env["SPARK_DIST_CLASSPATH"] += os.pathsep + jar
    env[DAEMON_MARKER] = MASTER_NAME
    env["SPARK_MASTER_OPTS"] = format_java_opts(master_properties(settings, profile))
    ports = {"rpc": settings.master_port, "webui": settings.master_webui_port,
             "rest": settings.rest_port}
    log_file = settings.layout.logs_dir / f"{MASTER_NAME}.log"
    return DaemonSpec(MASTER_NAME, "master", argv, env, log_file, ports)


def worker_spec(
    settings: Settings, profile: ClusterProfile, install: SparkInstall, name: str, webui_port: int
) -> DaemonSpec:
    check_name("worker", name)
    argv = (
        str(install.spark_class), WORKER_CLASS,
        "--host", settings.local_host,
        "--cores", str(profile.worker_cores),
        "--memory", profile.worker_memory,
        "--work-dir", str(settings.layout.worker_dir(name)),
        "--webui-port", str(webui_port),
    )
    auth = rpc_auth.worker_properties_file(settings, name)
    if auth is not None:  # the RPC secret: in a file, never on the command line
        argv = (*argv, "--properties-file", str(auth))
    argv = (*argv, settings.master_url)
    env = base_env(settings, profile, install)
    env[DAEMON_MARKER] = name
    # Spark's launcher puts SPARK_CONF_DIR first on the classpath of the drivers and executors
    # a worker starts; empty, it lets their JVMs use class archives (cluster.class_archives).
    # A worker reads no file of it: its settings are SPARK_WORKER_OPTS.
    env["SPARK_CONF_DIR"] = str(settings.layout.worker_conf_dir)
    env["SPARK_WORKER_OPTS"] = format_java_opts(
        {**worker_properties(profile), **metrics_properties(settings.config_dir)}
    )
    log_file = settings.layout.logs_dir / f"{name}.log"
    return DaemonSpec(name, "worker", argv, env, log_file, {"webui": webui_port})


# --- pid files -------------------------------------------------------------------------
def write_pid_file(layout: StateLayout, record: PidRecord) -> Path:
    path = layout.pid_file(record.name)
    write_json_atomic(path, asdict(record))
    return path


def read_pid_file(layout: StateLayout, name: str) -> PidRecord | None:
    """The record of ``name``, or ``None`` if there is none or it cannot be parsed."""
    return read_record(layout.pid_file(name), PidRecord.from_json, "pid file")


def pid_file_names(layout: StateLayout) -> list[str]:
    pids = layout.cluster_dir / "pids"
    if not pids.is_dir():
        return []
    return sorted(p.stem for p in pids.glob("*.json") if not p.name.startswith("."))


def remove_pid_file(layout: StateLayout, name: str) -> None:
    layout.pid_file(name).unlink(missing_ok=True)
