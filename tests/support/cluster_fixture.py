"""One real Spark standalone cluster (master + 2 workers) per test session, on free ports.

Started the embedded way: one node agent per node (master, worker-1..3; worker-3's agent is
a spare, idle until a scale-up starts its worker), each asked to start its daemon; jar
release r1 active; class archives trained. Teardown stops daemons and agents.

Every test that needs a cluster (integration, DAG runs, e2e) shares it; teardown stops it and
fails if any process started under its state root survives. A test that changes the cluster
(scale, restart) leaves it as it found it: master + 2 workers, running.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from support.integration import ClusterHandle

from streamops.cluster.profile import ClusterProfile
from streamops.exceptions import StreamopsError
from streamops.processes import processes_with_marker
from streamops.settings import Settings
from streamops.stack.class_training import train_class_archives
from streamops.stack.local_cluster import LocalCluster


@pytest.fixture(scope="session")
def spark_cluster(
    tmp_path_factory: pytest.TempPathFactory, free_port: Callable[[], int]
) -> Iterator[ClusterHandle]:
    root = tmp_path_factory.mktemp("state")
    settings = Settings.from_env(
        {},
        state_root=str(root),
        master_port=free_port(),
        master_webui_port=free_port(),
        rest_port=free_port(),
    )
    profile = ClusterProfile.from_mapping(
        {"workers": 2, "max_workers": 3, "worker_cores": 3, "worker_memory": "3g",
         "worker_webui_port_base": 0, "jar_release": "r1"}
    )
    cluster = LocalCluster(settings, profile)
    try:
        cluster.start()  # inside: a failed start still stops what it started (agents too)
        # what an operator does once per JDK and jar release: every job JVM of the session
        # then maps the class archives. A failed training fails the tests that check them
        # (tests/integration/test_class_archives.py), not the whole session.
        try:
            train_class_archives(settings)
            failed = ""
        except StreamopsError as exc:
            failed = f"{type(exc).__name__}: {exc}"
        yield ClusterHandle(settings, cluster, training_error=failed)
    finally:
        cluster.stop()
        left = processes_with_marker(Path(settings.state_root))
        assert not left, f"processes left behind by the cluster: {left}"
