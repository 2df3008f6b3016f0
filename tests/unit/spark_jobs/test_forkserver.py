"""The driver's fork server and ``streamops-python``: real processes, real sockets."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from spark_jobs.forkserver.server import ForkServer, parent_of
from spark_jobs.runtime.warmup import WARMUP_FORMAT, WarmupDataSource

CLIENT = str(Path(sys.executable).parent / "streamops-python")
PROBE = """
import os, sys, time
print("argv", sys.argv[1:], "env", os.environ.get("PROBE"), "cwd", os.getcwd(), flush=True)
print("pid", os.getpid(), "ppid", os.getppid(), flush=True)
print("preloaded", "pyspark.worker" in sys.modules, flush=True)
print("to stderr", file=sys.stderr)
if sys.argv[1:2] == ["sleep"]:
    time.sleep(60)
if sys.argv[1:2] == ["read"]:
    print("read", sys.stdin.readline().strip(), flush=True)
sys.exit(int(sys.argv[1]) if sys.argv[1:2] and sys.argv[1].isdigit() else 0)
"""


@pytest.fixture()
def server(tmp_path: Path) -> Iterator[ForkServer]:
    """A started server that serves this test process (as the driver's JVM), ready."""
    started = ForkServer.start()
    assert started is not None, "streamops-python is not installed beside this Python"
    assert started.proc.stdin is not None
    started.proc.stdin.write(f"allow {os.getpid()}\n".encode())
    started.proc.stdin.flush()
    deadline = time.monotonic() + 60
    while not os.path.exists(started.path) and time.monotonic() < deadline:
        time.sleep(0.05)
    try:
        yield started
    finally:
        started.stop()


@pytest.fixture()
def probe_env(tmp_path: Path, server: ForkServer) -> dict[str, str]:
    (tmp_path / "mods").mkdir()
    (tmp_path / "mods" / "probe.py").write_text(PROBE)
    return dict(
        os.environ, STREAMOPS_PYFORK=server.path, PROBE="hello",
        PYTHONPATH=str(tmp_path / "mods"), STREAMOPS_PYFORK_PYTHON=sys.executable,
        PYTHONHASHSEED=os.environ.get("PYTHONHASHSEED", "0"),
    )  # fmt: skip


def run_probe(env: dict[str, str], *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [CLIENT, "-m", "probe", *args], env=env, cwd=cwd, capture_output=True, text=True,
        input="line from stdin\n", timeout=60,
    )  # fmt: skip


def probe_pid(out: str) -> int:
    return int(out.split("pid ")[1].split()[0])


def start_sleeper(env: dict[str, str], cwd: Path) -> tuple[subprocess.Popen[str], int]:
    """A worker that sleeps, and the pid of the process that runs it."""
    proc = subprocess.Popen(
        [CLIENT, "-m", "probe", "sleep"], env=env, cwd=cwd, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    return proc, probe_pid(proc.stdout.readline() + proc.stdout.readline())


def test_a_forked_worker_runs_like_python_m(
    server: ForkServer, probe_env: dict[str, str], tmp_path: Path
) -> None:
    run = run_probe(probe_env, "read", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert f"argv ['read'] env hello cwd {tmp_path}" in run.stdout
    assert "preloaded True" in run.stdout  # forked from the server, imports done
    assert "read line from stdin" in run.stdout
    assert "to stderr" in run.stderr
    assert f"ppid {server.proc.pid}\n" in run.stdout
    assert run_probe(probe_env, "7", cwd=tmp_path).returncode == 7


def test_signals_reach_the_worker_and_a_killed_requester_takes_it_along(
    probe_env: dict[str, str], tmp_path: Path
) -> None:
    proc, pid = start_sleeper(probe_env, tmp_path)
    proc.terminate()  # what Spark's destroy() does
    assert proc.wait(timeout=30) == -signal.SIGTERM
    assert not os.path.exists(f"/proc/{pid}") or parent_of(pid) is None
    proc, pid = start_sleeper(probe_env, tmp_path)
    proc.kill()
    proc.wait(timeout=30)
    deadline = time.monotonic() + 10
    while os.path.exists(f"/proc/{pid}") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not os.path.exists(f"/proc/{pid}")


def test_other_processes_are_refused_and_run_the_real_python(
    server: ForkServer, probe_env: dict[str, str], tmp_path: Path
) -> None:
    # started through a shell: its parent is not the allowed "JVM"
    run = subprocess.run(
        ["sh", "-c", f"{CLIENT} -m probe 5"], env=probe_env, cwd=tmp_path,
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert run.returncode == 5, run.stderr
    assert "preloaded False" in run.stdout
    assert f"ppid {server.proc.pid}\n" not in run.stdout


def test_executors_of_the_application_are_served(
    server: ForkServer, probe_env: dict[str, str], tmp_path: Path
) -> None:
    assert server.proc.stdin is not None
    server.proc.stdin.write(b"allow-app app-20261124000000-0007\n")
    server.proc.stdin.flush()

    def via_executor(app: str) -> subprocess.CompletedProcess[str]:
        # a parent whose command line is an executor's: ... --app-id APP ...
        spawn = f"import subprocess, sys; sys.exit(subprocess.call([{CLIENT!r}, '-m', 'probe']))"
        return subprocess.run(
            [sys.executable, "-c", spawn, "--executor-id", "0", "--app-id", app],
            env=probe_env, cwd=tmp_path, capture_output=True, text=True, timeout=60,
        )  # fmt: skip

    ours = via_executor("app-20261124000000-0007")
    assert ours.returncode == 0, ours.stderr
    assert f"ppid {server.proc.pid}\n" in ours.stdout
    other = via_executor("app-20261124000000-0008")
    assert other.returncode == 0, other.stderr
    assert "preloaded False" in other.stdout


def test_without_a_server_it_is_the_real_python(probe_env: dict[str, str], tmp_path: Path) -> None:
    env = dict(probe_env, STREAMOPS_PYFORK=str(tmp_path / "absent"))
    run = run_probe(env, "3", cwd=tmp_path)
    assert run.returncode == 3
    assert "preloaded False" in run.stdout


def test_stop_ends_the_workers_and_removes_the_socket(
    server: ForkServer, probe_env: dict[str, str], tmp_path: Path
) -> None:
    proc, pid = start_sleeper(probe_env, tmp_path)
    server.stop()
    assert server.proc.returncode == 0
    assert proc.wait(timeout=30) == -signal.SIGTERM
    assert not os.path.exists(f"/proc/{pid}")
    assert not server.directory.exists()


def test_a_session_reads_a_python_data_source_through_the_server(
    spark: SparkSession, server: ForkServer
) -> None:
    sc = spark.sparkContext
    saved = sc.pythonExec, dict(sc.environment)
    # serve the JVM of this (local) session: its planning and read workers are all its own
    server.attach(sc)
    try:
        spark.dataSource.register(WarmupDataSource)
        rows = spark.read.format(WARMUP_FORMAT).option("tasks", 2).load().collect()
    finally:
        sc.pythonExec = saved[0]
        sc.environment.clear()
        sc.environment.update(saved[1])
        spark.dataSource.register(WarmupDataSource)  # again, with the real Python
    # a read worker is forked by Spark's daemon, itself forked by the server
    daemons = {parent_of(row.pid) for row in rows}
    assert {parent_of(d) for d in daemons if d is not None} == {server.proc.pid}


def test_a_dead_server_is_not_attached(spark: SparkSession, server: ForkServer) -> None:
    sc = spark.sparkContext
    before = sc.pythonExec, dict(sc.environment)
    server.proc.kill()
    server.proc.wait()
    server.attach(sc)  # logs a warning; the session keeps the real Python
    assert (sc.pythonExec, dict(sc.environment)) == before
