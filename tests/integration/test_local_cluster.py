"""A real master and workers on free loopback ports, in a temporary state root.

The tests run in file order against one cluster (module fixture): start → submit a Python
driver through the REST API → add and remove a worker → stop. Teardown stops the cluster
whatever happened and checks that no process of it is left.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import pytest

from streamops import processes
from streamops.cluster import (
    ClusterProfile,
    MasterClient,
    SubmissionStatus,
    check_spark_install,
    submission_request,
)
from streamops.settings import Settings
from streamops.stack.local_cluster import LocalCluster

pytestmark = pytest.mark.integration

T = TypeVar("T")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def free_port_block(count: int) -> int:
    """First of ``count`` consecutive ports nothing listens on now."""
    for _ in range(50):
        first = free_port()
        if first + count <= 65535 and all(_is_free(first + i) for i in range(count)):
            return first
    raise RuntimeError(f"no block of {count} free ports")


def _is_free(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def eventually(check: Callable[[], T | None], timeout: float = 60.0) -> T:
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result is not None:
            return result
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.5)


def java_processes_under(root: Path) -> list[str]:
    ps = subprocess.run(
        ["ps", "-ww", "-eo", "pid,pgid,args"], capture_output=True, text=True, check=True
    ).stdout
    return [line for line in ps.splitlines() if "java" in line and str(root) in line]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    root = tmp_path_factory.mktemp("cluster-state")
    master, webui, rest = free_port_block(3), free_port_block(1), free_port_block(1)
    settings = Settings.from_env(
        {},
        state_root=str(root),
        master_port=master,
        master_webui_port=webui,
        rest_port=rest,
        python=sys.executable,
    )
    profile = ClusterProfile(
        workers=2,
        worker_cores=1,
        worker_memory="1g",
        daemon_memory="512m",
        worker_webui_port_base=free_port_block(4),
        start_timeout=120,
        stop_timeout=10,
        decommission_timeout=60,
    )
    local = LocalCluster(settings, profile)
    try:
        yield local
    finally:
        local.stop()
        assert java_processes_under(root) == []
        assert processes.processes_with_marker(settings.layout.root) == []


def test_start_gives_two_alive_workers(cluster: LocalCluster) -> None:
    status = cluster.start()
    assert status.master_alive and status.master_status == "ALIVE"
    assert [(w.name, w.state) for w in status.workers] == [
        ("worker-1", "ALIVE"),
        ("worker-2", "ALIVE"),
    ]
    assert all(w.cores == 1 and w.memory == 1024 and w.pid for w in status.workers)

    client = MasterClient(cluster.settings)
    assert client.state()["url"] == cluster.settings.master_url
    unknown = client.submission_status("driver-none")  # REST answers: JSON, not refused
    assert not unknown.found

    again = cluster.start()  # idempotent: same daemons, nothing new
    assert [w.pid for w in again.workers] == [w.pid for w in status.workers]
    assert again.master_pid == status.master_pid


def test_python_driver_through_rest_runs_in_the_worker_group(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    jar = tmp_path / "empty.jar"
    with zipfile.ZipFile(jar, "w") as zf:
        zf.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\n\n")
    release = tmp_path / "release"
    script = tmp_path / "hello_driver.py"
    script.write_text(
        "import os, sys, time\n"
        "print('hello-driver', sys.argv[1:], flush=True)\n"
        f"deadline = time.time() + 60\n"
        f"while not os.path.exists({str(release)!r}) and time.time() < deadline:\n"
        "    time.sleep(0.2)\n"
    )
    client = MasterClient(cluster.settings)
    body = submission_request(
        app_resource=f"file:{jar}",
        main_class="org.apache.spark.deploy.PythonRunner",
        app_args=[str(script), "", "--flag", "two words"],
        client_spark_version=check_spark_install().version,
        spark_properties={
            "spark.master": cluster.settings.master_url,
            "spark.app.name": "hello-driver",
            "spark.submit.deployMode": "cluster",
            "spark.driver.supervise": "false",
            "spark.driver.memory": "512m",
            "spark.pyspark.python": sys.executable,
        },
    )
    driver_id = client.create_submission(body)

    def running_python() -> int | None:
        found = [
            line.split()
            for line in subprocess.run(
                ["ps", "-ww", "-eo", "pid,pgid,args"], capture_output=True, text=True
            ).stdout.splitlines()
            if str(script) in line and "python" in line and "java" not in line
        ]
        return int(found[0][1]) if found else None

    pgid = eventually(running_python)
    worker_pids = {w.pid for w in cluster.status().workers}
    assert pgid in worker_pids, "the driver's Python runs in its worker's process group"
    release.touch()

    def finished() -> SubmissionStatus | None:
        status = client.submission_status(driver_id)
        return status if status.driver_state in ("FINISHED", "FAILED", "ERROR", "KILLED") else None

    status = eventually(finished)
    assert status.driver_state == "FINISHED", status
    worker = next(w for w in cluster.status().workers if w.id == status.worker_id)
    assert worker.name is not None
    stdout = cluster.layout.worker_dir(worker.name) / driver_id / "stdout"
    assert "hello-driver ['--flag', 'two words']" in stdout.read_text()


def test_add_then_remove_worker_gracefully(cluster: LocalCluster) -> None:
    assert cluster.add_worker() == "worker-3"
    status = cluster.status()
    assert [w.name for w in status.alive_workers] == ["worker-1", "worker-2", "worker-3"]
    removed = next(w for w in status.workers if w.name == "worker-3")

    cluster.remove_worker("worker-3")
    status = cluster.status()
    assert [w.name for w in status.alive_workers] == ["worker-1", "worker-2"]
    assert "worker-3" not in cluster.daemons()
    assert removed.pid is not None and not processes.pid_alive(removed.pid)
    entry = next(w for w in MasterClient(cluster.settings).workers() if w.id == removed.id)
    assert entry.state in ("DECOMMISSIONED", "DEAD")
    log = (cluster.layout.logs_dir / "worker-3.log").read_text()
    assert "Decommission worker" in log


def test_stop_leaves_no_process(cluster: LocalCluster) -> None:
    pids = [r.pid for r in cluster.daemons().values()]
    stopped = cluster.stop()
    assert stopped == ["worker-1", "worker-2", "master"]
    assert not cluster.status().master_alive
    assert cluster.daemons() == {}
    assert not any(processes.pid_alive(pid) for pid in pids)
    assert java_processes_under(cluster.layout.root) == []
    assert cluster.stop() == []  # idempotent
