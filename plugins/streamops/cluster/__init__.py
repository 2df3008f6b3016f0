"""The Spark standalone cluster: its daemons and a client of any master.

- :class:`MasterClient` talks to a master's JSON and REST submission API;
- :func:`check_spark_install` makes sure the installed pyspark has matching jars.

Nothing here imports pyspark. The local cluster (``LocalCluster``, which drives the node
agents of :mod:`streamops.agent`) lives above both, in :mod:`streamops.stack.local_cluster`.
"""

from __future__ import annotations

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

__all__ = [
    "AppInfo",
    "ClusterProfile",
    "ClusterStatus",
    "DriverInfo",
    "KillResult",
    "MasterClient",
    "SparkInstall",
    "SubmissionStatus",
    "WorkerInfo",
    "WorkerStatus",
    "check_spark_install",
    "find_spark_home",
    "submission_request",
]
