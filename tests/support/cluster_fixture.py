"""One real Spark standalone cluster (master + 2 workers) per test session, on free ports.

Started the embedded way: one node agent per node (master, worker-1..3; worker-3's agent is
a spare, idle until a scale-up starts its worker), each asked to start its daemon; jar
release r1 active; class archives trained. Teardown stops daemons and agents.

Every test that needs a cluster (integration, DAG runs, e2e) shares it; teardown stops it and
fails if any process started under its state root survives. A test that changes the cluster
(scale, restart) leaves it as it found it: master + 2 workers, running. A test that did not
(it failed in the middle of a node kill, a scale) is followed by :func:`restore_shape`, so that
one failure is not also the next test's: the line it prints names what it mended.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Generator, Iterator
from pathlib import Path

import pytest
from support.integration import ClusterHandle

from streamops.cluster.daemons import MASTER_NAME
from streamops.cluster.profile import ClusterProfile
from streamops.exceptions import StreamopsError
from streamops.processes import processes_with_marker
from streamops.settings import Settings
from streamops.stack.class_training import train_class_archives
from streamops.stack.local_cluster import LocalCluster

log = logging.getLogger(__name__)
BASE_WORKERS = ("worker-1", "worker-2")
"""The session cluster's shape, which every test leaves as it found it."""


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


def restore_shape(handle: ClusterHandle, wait: float = 120.0) -> list[str]:
    """The session cluster back to master + :data:`BASE_WORKERS`, each ALIVE in the master:
    a worker beyond them killed, a dead daemon (and its agent) started again. What was
    mended (and what could not be, within ``wait``), empty when the shape held."""
    cluster, mended = handle.cluster, []
    live = cluster.daemons()
    for name, record in live.items():
        if record.kind == "worker" and name not in BASE_WORKERS:
            cluster.remove_worker(name, graceful=False)
            mended.append(f"removed {name}")
    missing = [n for n in (MASTER_NAME, *BASE_WORKERS) if n not in live]
    if missing:
        cluster.start(workers=len(BASE_WORKERS))  # agents, master and workers unless they run
        mended.append(f"started {', '.join(missing)}")
    deadline = time.monotonic() + wait
    while True:
        try:
            alive = sum(w.state == "ALIVE" for w in handle.registry.client.workers())
        except StreamopsError:  # the master is starting
            alive = 0
        if alive == len(BASE_WORKERS):
            return mended
        if time.monotonic() >= deadline:  # the next test says what it finds
            return [*mended, f"{alive} ALIVE worker(s) after {wait:.0f} s, not "
                             f"{len(BASE_WORKERS)}"]  # fmt: skip
        time.sleep(0.5)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Generator:
    """After a test on the session cluster (its fixtures torn down), the cluster's shape."""
    handle = getattr(item, "funcargs", {}).get("spark_cluster")
    yield
    if isinstance(handle, ClusterHandle) and nextitem is not None:
        mended = restore_shape(handle)
        if mended:
            log.warning("%s left the session cluster changed: %s", item.nodeid, "; ".join(mended))
            print(f"\n{item.nodeid} left the session cluster changed: {'; '.join(mended)}")
