from __future__ import annotations

import os
import signal
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from streamops import processes
from streamops.cluster import daemons
from streamops.cluster.profile import ClusterProfile
from streamops.cluster.spark_home import SparkInstall
from streamops.processes import DaemonSpec, PidRecord
from streamops.settings import Settings


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings.from_env(
        {},
        state_root=str(tmp_path / "state"),
        config_dir=str(tmp_path / "config"),
        master_host="127.0.0.1",
        master_port=17001,
        master_webui_port=17002,
        rest_port=17003,
        python="/opt/py/bin/python",
    )


@pytest.fixture
def install(tmp_path: Path) -> SparkInstall:
    return SparkInstall(home=tmp_path / "spark", version="4.3.0", scala_version="2.13")


PROFILE = ClusterProfile(worker_cores=2, worker_memory="3g", daemon_memory="600m")


# --- commands and environments ---------------------------------------------------------
def test_master_spec(settings: Settings, install: SparkInstall, tmp_path: Path) -> None:
    spec = daemons.master_spec(settings, PROFILE, install)
    state = tmp_path / "state"
    assert spec.argv == (
        str(tmp_path / "spark" / "bin" / "spark-class"),
        "org.apache.spark.deploy.master.Master",
        "--host", "127.0.0.1", "--port", "17001", "--webui-port", "17002",
    )
    assert spec.env["SPARK_MASTER_OPTS"] == (
        "-Dspark.master.rest.enabled=true -Dspark.master.rest.host=127.0.0.1 "
        "-Dspark.master.rest.port=17003 -Dspark.deploy.recoveryMode=FILESYSTEM "
        f"-Dspark.deploy.recoveryDirectory={state}/cluster/recovery"
    )
    assert spec.log == state / "cluster" / "logs" / "master.log"
    assert spec.ports == {"rpc": 17001, "webui": 17002, "rest": 17003}
    assert spec.name == "master" and spec.kind == "master"


def test_common_env(settings: Settings, install: SparkInstall, tmp_path: Path) -> None:
    for spec in (daemons.master_spec(settings, PROFILE, install),
                 daemons.worker_spec(settings, PROFILE, install, "worker-1", 8181)):
        assert spec.env["SPARK_HOME"] == str(tmp_path / "spark")
        log4j = tmp_path / "config" / "spark" / "log4j2.properties"
        assert spec.env["LOG4J_CONFIGURATION_FILE"] == str(log4j)
        assert spec.env["SPARK_LOCAL_IP"] == "127.0.0.1"
        assert spec.env["SPARK_DAEMON_MEMORY"] == "600m"
        assert spec.env["PYSPARK_PYTHON"] == "/opt/py/bin/python"
        assert spec.env["STREAMOPS_CLUSTER"] == str(tmp_path / "state")
        assert spec.env["STREAMOPS_DAEMON"] == spec.name


def test_the_workers_configuration_directory_is_their_own_and_empty(
    settings: Settings, install: SparkInstall, tmp_path: Path
) -> None:
    # the master reads the project's Spark defaults; a worker (and every JVM it launches, the
    # directory first on their classpath) gets an empty directory, so class archives work
    master = daemons.master_spec(settings, PROFILE, install)
    worker = daemons.worker_spec(settings, PROFILE, install, "worker-1", 8181)
    assert master.env["SPARK_CONF_DIR"] == str(tmp_path / "config" / "spark")
    conf = tmp_path / "state" / "cluster" / "worker-conf"
    assert worker.env["SPARK_CONF_DIR"] == str(conf)


def test_worker_spec(settings: Settings, install: SparkInstall, tmp_path: Path) -> None:
    spec = daemons.worker_spec(settings, PROFILE, install, "worker-2", 8182)
    assert spec.argv == (
        str(tmp_path / "spark" / "bin" / "spark-class"),
        "org.apache.spark.deploy.worker.Worker",
        "--host", "127.0.0.1", "--cores", "2", "--memory", "3g",
        "--work-dir", str(tmp_path / "state" / "cluster" / "work" / "worker-2"),
        "--webui-port", "8182",
        "spark://127.0.0.1:17001",
    )
    assert spec.env["SPARK_WORKER_OPTS"] == (
        "-Dspark.decommission.enabled=true -Dspark.worker.decommission.signal=PWR "
        "-Dspark.worker.cleanup.enabled=true -Dspark.worker.cleanup.interval=1800 "
        "-Dspark.worker.cleanup.appDataTtl=604800"
    )
    assert "SPARK_MASTER_OPTS" not in spec.env
    assert spec.log == tmp_path / "state" / "cluster" / "logs" / "worker-2.log"
    assert spec.ports == {"webui": 8182}


def test_profile_properties_extend_opts(settings: Settings, install: SparkInstall) -> None:
    profile = ClusterProfile(master_properties={"spark.deploy.spreadOut": "false"},
                             worker_properties={"spark.worker.timeout": "30"})
    master = daemons.master_spec(settings, profile, install)
    worker = daemons.worker_spec(settings, profile, install, "w", 0)
    assert master.env["SPARK_MASTER_OPTS"].endswith(" -Dspark.deploy.spreadOut=false")
    assert worker.env["SPARK_WORKER_OPTS"].endswith(" -Dspark.worker.timeout=30")


def test_worker_spec_rejects_unsafe_name(settings: Settings, install: SparkInstall) -> None:
    with pytest.raises(Exception, match="invalid worker name"):
        daemons.worker_spec(settings, PROFILE, install, "../x", 0)


def test_java_opts_quoting() -> None:
    opts = daemons.format_java_opts({"a.b": "/path with space", "c": 'say "hi"', "d": "x"})
    assert opts == '"-Da.b=/path with space" "-Dc=say \\"hi\\"" -Dd=x'


def test_process_env_drops_stray_spark_variables(settings: Settings, install: SparkInstall
                                                 ) -> None:
    spec = daemons.worker_spec(settings, PROFILE, install, "worker-1", 0)
    env = processes.process_env(spec, {
        "PATH": "/bin", "SPARK_HOME": "/elsewhere", "SPARK_MASTER_OPTS": "-Dx=y",
        "PYSPARK_DRIVER_PYTHON": "ipython", "STREAMOPS_DAEMON": "other",
    })
    assert env["PATH"] == "/bin"
    assert env["SPARK_HOME"] == spec.env["SPARK_HOME"]
    assert "SPARK_MASTER_OPTS" not in env and "PYSPARK_DRIVER_PYTHON" not in env
    assert env["STREAMOPS_DAEMON"] == "worker-1"


def test_worker_names() -> None:
    assert daemons.worker_name(3) == "worker-3"
    assert daemons.worker_index("worker-12") == 12
    assert daemons.worker_index("worker-0") is None
    assert daemons.worker_index("extra") is None


# --- pid files -------------------------------------------------------------------------
def record(pid: int, cmd: list[str], name: str = "worker-1", log: str = "/tmp/x.log"
           ) -> PidRecord:
    return PidRecord(pid=pid, pgid=pid, name=name, kind="worker", ports={"webui": 0},
                     started_at="2026-01-01T00:00:00+00:00", cmd=cmd, log=log)


def test_pid_file_round_trip(settings: Settings) -> None:
    rec = record(1234, ["spark-class", "X", "--a"])
    path = daemons.write_pid_file(settings.layout, rec)
    assert path == settings.layout.pid_file("worker-1")
    assert daemons.read_pid_file(settings.layout, "worker-1") == rec
    assert daemons.pid_file_names(settings.layout) == ["worker-1"]
    daemons.remove_pid_file(settings.layout, "worker-1")
    assert daemons.read_pid_file(settings.layout, "worker-1") is None
    assert daemons.pid_file_names(settings.layout) == []


def test_unreadable_pid_file_is_ignored(settings: Settings) -> None:
    path = settings.layout.pid_file("master")
    path.parent.mkdir(parents=True)
    path.write_text('{"pid": "nope"}')
    assert daemons.read_pid_file(settings.layout, "master") is None


def test_cmdline_matches_both_launch_phases() -> None:
    cmd = ["/spark/bin/spark-class", "org.apache.spark.deploy.worker.Worker", "--cores", "1"]
    bash = ["bash", "/spark/bin/spark-class", "org.apache.spark.deploy.worker.Worker",
            "--cores", "1"]
    java = ["/usr/bin/java", "-cp", "x", "-Xmx512m", "org.apache.spark.deploy.worker.Worker",
            "--cores", "1"]
    assert processes.cmdline_matches(bash, cmd)
    assert processes.cmdline_matches(java, cmd)
    assert not processes.cmdline_matches(["/usr/bin/vim", "--cores", "1"], cmd)
    assert not processes.cmdline_matches(java[:-1] + ["2"], cmd)
    assert not processes.cmdline_matches([], cmd)
    assert not processes.cmdline_matches(java, [])


# --- processes -------------------------------------------------------------------------
FAKE_DAEMON = textwrap.dedent("""\
    import signal, subprocess, sys, time
    if "--ignore-term" in sys.argv:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    # like pyspark.daemon, which calls setpgid(0, 0): the child leaves the group
    subprocess.Popen(["sleep", "300"], start_new_session="--child-own-group" in sys.argv)
    print("fake daemon up", flush=True)
    time.sleep(300)
""")


@pytest.fixture
def fake_spark_class(tmp_path: Path) -> Path:
    """A ``spark-class`` stand-in: execs Python, which starts a child and sleeps."""
    script = tmp_path / "daemon.py"
    script.write_text(FAKE_DAEMON)
    spark_class = tmp_path / "spark-class"
    spark_class.write_text(f'#!/bin/bash\nexec {sys.executable} {script} "$@"\n')
    spark_class.chmod(0o755)
    return spark_class


def fake_spec(tmp_path: Path, spark_class: Path, *args: str) -> DaemonSpec:
    return DaemonSpec(
        name="worker-9", kind="worker",
        argv=(str(spark_class), "org.example.FakeDaemon", "--id", str(tmp_path), *args),
        env={"STREAMOPS_CLUSTER": str(tmp_path), "STREAMOPS_DAEMON": "worker-9"},
        log=tmp_path / "logs" / "worker-9.log", ports={"webui": 0},
    )


def test_launch_and_stop_kill_the_whole_group(tmp_path: Path, fake_spark_class: Path) -> None:
    rec = processes.launch(fake_spec(tmp_path, fake_spark_class))
    try:
        assert rec.pgid == rec.pid and os.getpgid(rec.pid) == rec.pid
        assert processes.is_running(rec)
        _wait(lambda: len(processes.group_members(rec.pgid)) == 2)
        assert set(processes.group_members(rec.pgid)) <= set(
            processes.processes_with_marker(tmp_path, "worker-9"))
        processes.stop_daemons([rec], timeout=5)
        assert not processes.is_running(rec)
        assert processes.group_members(rec.pgid) == []
        assert "=== " in Path(rec.log).read_text()
    finally:
        processes.kill_group(rec.pgid)


def test_stop_kills_a_daemon_that_ignores_sigterm(tmp_path: Path, fake_spark_class: Path
                                                  ) -> None:
    rec = processes.launch(fake_spec(tmp_path, fake_spark_class, "--ignore-term"))
    try:
        _wait(lambda: "fake daemon up" in Path(rec.log).read_text())
        processes.stop_daemons([rec], timeout=0.5)
        assert not processes.is_running(rec)
        assert processes.group_members(rec.pgid) == []
    finally:
        processes.kill_group(rec.pgid)


def test_sweep_ends_processes_that_left_the_group(tmp_path: Path, fake_spark_class: Path
                                                  ) -> None:
    rec = processes.launch(fake_spec(tmp_path, fake_spark_class, "--child-own-group"))
    try:
        _wait(lambda: len(processes.processes_with_marker(tmp_path)) == 2)
        assert processes.processes_with_marker(tmp_path, "worker-1") == []
        child = next(p for p in processes.processes_with_marker(tmp_path) if p != rec.pid)
        processes.stop_daemons([rec], timeout=5)
        assert processes.group_members(rec.pgid) == []
        assert processes.processes_with_marker(tmp_path, "worker-9") == [child]
        assert processes.sweep(tmp_path, "worker-9") == [child]
        assert processes.processes_with_marker(tmp_path) == []
    finally:
        processes.kill_group(rec.pgid)
        processes.sweep(tmp_path)


def test_stale_pid_files(tmp_path: Path, fake_spark_class: Path) -> None:
    dead = record(_dead_pid(), ["spark-class", "org.example.FakeDaemon"])
    assert not processes.is_running(dead)
    reused = record(os.getpid(), ["spark-class", "org.apache.spark.deploy.worker.Worker"])
    assert not processes.is_running(reused), "a pid now running another program is stale"
    processes.stop_daemons([reused], timeout=0)  # must not signal this test process
    rec = processes.launch(fake_spec(tmp_path, fake_spark_class))
    try:
        assert processes.is_running(rec)
        os.kill(rec.pid, signal.SIGKILL)
        _wait(lambda: not processes.is_running(rec))
        processes.stop_daemons([rec], timeout=0)  # a stale record: ends the orphaned child
        assert processes.group_members(rec.pgid) == []
    finally:
        processes.kill_group(rec.pgid)


def _dead_pid() -> int:
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    return pid


def _wait(predicate: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.05)


def test_a_node_host_moves_the_worker_not_the_master(
    settings: Settings, install: SparkInstall
) -> None:
    """On a multi-host deployment (compose) a worker binds to its own name."""
    on_node = settings.model_copy(update={"node_host": "spark-worker-3"})
    worker = daemons.worker_spec(on_node, PROFILE, install, "worker-3", 0)
    assert worker.argv[worker.argv.index("--host") + 1] == "spark-worker-3"
    assert worker.env["SPARK_LOCAL_IP"] == "spark-worker-3"
    assert worker.argv[-1] == settings.master_url
    master = daemons.master_spec(on_node, PROFILE, install)
    assert master.argv[master.argv.index("--host") + 1] == settings.master_host
    assert settings.local_host == settings.master_host  # default: everything on one host
