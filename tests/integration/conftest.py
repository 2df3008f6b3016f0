"""One real Spark standalone cluster (master + 2 workers) per test session, on free ports.

Every integration test shares it; teardown stops it and fails if any process started under
its state root survives.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from support.integration import ClusterHandle

from streamops.cluster.daemons import processes_with_marker
from streamops.cluster.local import LocalCluster
from streamops.cluster.profile import ClusterProfile
from streamops.settings import Settings

log = logging.getLogger("tests.integration")


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
        {"workers": 2, "worker_cores": 2, "worker_memory": "3g", "worker_webui_port_base": 0}
    )
    cluster = LocalCluster(settings, profile)
    cluster.start()
    try:
        yield ClusterHandle(settings, cluster)
    finally:
        cluster.stop()
        left = processes_with_marker(Path(settings.state_root))
        assert not left, f"processes left behind by the cluster: {left}"
