"""The fork server forks only for processes of its own network namespace: a fork binds the
server's loopback, which a JVM of another host (another namespace sharing this kernel and
file system) cannot reach; that one runs the real Python."""

from __future__ import annotations

import os
import shutil
import subprocess
import time

import pytest

from spark_jobs.forkserver.server import same_network


def test_a_process_of_this_namespace_is_served() -> None:
    assert same_network(os.getpid())
    assert same_network(2**22 + 11)  # gone or unreadable: nothing says it is elsewhere


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("unshare") is None,
                    reason="a network namespace needs root and unshare")  # fmt: skip
def test_a_process_of_another_namespace_is_refused() -> None:
    proc = subprocess.Popen(["unshare", "--net", "sleep", "30"])
    try:
        deadline = time.monotonic() + 10
        while (os.readlink(f"/proc/{proc.pid}/exe").endswith("unshare")
               and time.monotonic() < deadline):  # fmt: skip
            time.sleep(0.05)  # unshare, then exec of sleep in the new namespace
        assert not same_network(proc.pid)
    finally:
        proc.kill()
        proc.wait()
