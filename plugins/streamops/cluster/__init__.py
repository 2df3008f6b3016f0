"""The Spark standalone cluster: the embedded local cluster and a client of any master.

- :class:`LocalCluster` starts, stops, scales and inspects a master and workers on this
  machine (pid files and logs under ``<state>/cluster``);
- :class:`MasterClient` talks to a master's JSON and REST submission API;
- :func:`check_spark_install` makes sure the installed pyspark has matching jars.

Nothing here imports pyspark. ``LocalCluster`` is imported on first use: it drives the node
agents (:mod:`streamops.agent`), which themselves use the daemon code of this package.
"""

from __future__ import annotations

from typing import Any

from streamops.cluster.client import (
    AppInfo,
    DriverInfo,
    KillResult,
    MasterClient,
    SubmissionStatus,
    WorkerInfo,
    submission_request,
)
from streamops.cluster.profile import ClusterProfile
from streamops.cluster.spark_home import SparkInstall, check_spark_install, find_spark_home
from streamops.cluster.status import ClusterStatus, WorkerStatus


def __getattr__(name: str) -> Any:
    if name == "LocalCluster":
        from streamops.cluster.local import LocalCluster

        return LocalCluster
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "AppInfo",
    "ClusterProfile",
    "ClusterStatus",
    "DriverInfo",
    "KillResult",
    "LocalCluster",
    "MasterClient",
    "SparkInstall",
    "SubmissionStatus",
    "WorkerInfo",
    "WorkerStatus",
    "check_spark_install",
    "find_spark_home",
    "submission_request",
]
