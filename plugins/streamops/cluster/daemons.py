"""Spark daemons as processes: the exact commands, their environments and their pid files.

The first half is pure (what to run: :func:`master_spec`, :func:`worker_spec`), the second
half acts on processes (:func:`launch`, :func:`stop_daemons`). Each daemon runs in its own
session, so it leads a process group holding everything it starts (drivers, executors,
Python workers); stopping a daemon ends with ``SIGKILL`` to that group, so no JVM outlives
it. A pid file is trusted only while ``/proc/<pid>/cmdline`` still ends with the Spark class
and arguments it was started with; otherwise it is stale.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shlex
import signal
import subprocess
import time
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from streamops.cluster import rest_auth, rpc_auth
from streamops.cluster.metrics_conf import metrics_properties
from streamops.cluster.profile import ClusterProfile
from streamops.cluster.spark_home import SparkInstall
from streamops.names import check_name
from streamops.settings import Settings
from streamops.state.layout import StateLayout, read_json, write_json_atomic

log = logging.getLogger(__name__)

DaemonKind = Literal["master", "worker", "service"]

MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"

MASTER_NAME = "master"
WORKER_PREFIX = "worker-"
CLUSTER_MARKER = "STREAMOPS_CLUSTER"
"""Environment variable set to the state root in every daemon (children inherit it)."""
DAEMON_MARKER = "STREAMOPS_DAEMON"
"""Environment variable set to the daemon's name (children inherit it).

Python workers (``pyspark.daemon``) move to a process group of their own, so killing a
worker's group does not reach them; these two variables find them (and any other
descendant) by ``/proc/<pid>/environ``.
"""

_WORKER_NAME = re.compile(r"^worker-([1-9][0-9]*)$")

# Popen objects of daemons started by this process, kept to reap them (no zombies, no
# ResourceWarning); daemons started by another process are only known by their pid file.
_CHILDREN: dict[int, subprocess.Popen[bytes]] = {}


# --- what to run -----------------------------------------------------------------------
@dataclass(frozen=True)
class DaemonSpec:
    """Everything needed to start one daemon. ``env`` holds only the variables we set."""

    name: str
    kind: DaemonKind
    argv: tuple[str, ...]
    env: Mapping[str, str]
    log: Path
    ports: Mapping[str, int]


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


def process_env(spec: DaemonSpec, environ: Mapping[str, str]) -> dict[str, str]:
    """The full environment of a daemon: ours over the caller's, minus stray ``SPARK_*``.

    Inherited ``SPARK_*``/``PYSPARK_*`` variables (a shell's SPARK_HOME, SPARK_MASTER_OPTS,
    ...) would silently change the daemon, so they are dropped.
    """
    env = {
        k: v for k, v in environ.items()
        if not k.startswith(("SPARK_", "PYSPARK_")) and k not in (CLUSTER_MARKER, DAEMON_MARKER)
    }
    env.update(spec.env)
    return env


# --- pid files -------------------------------------------------------------------------
@dataclass(frozen=True)
class PidRecord:
    """The content of ``<state>/cluster/pids/<name>.json``."""

    pid: int
    pgid: int
    name: str
    kind: DaemonKind
    ports: dict[str, int]
    started_at: str
    cmd: list[str]
    log: str
    log_offset: int = 0

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> PidRecord:
        return cls(
            pid=int(data["pid"]),
            pgid=int(data["pgid"]),
            name=str(data["name"]),
            kind=data["kind"],
            ports={str(k): int(v) for k, v in dict(data.get("ports", {})).items()},
            started_at=str(data.get("started_at", "")),
            cmd=[str(c) for c in data.get("cmd", [])],
            log=str(data.get("log", "")),
            log_offset=int(data.get("log_offset", 0)),
        )


def write_pid_file(layout: StateLayout, record: PidRecord) -> Path:
    path = layout.pid_file(record.name)
    write_json_atomic(path, asdict(record))
    return path


def read_pid_file(layout: StateLayout, name: str) -> PidRecord | None:
    """The record of ``name``, or ``None`` if there is none or it cannot be parsed."""
    path = layout.pid_file(name)
    try:
        data = read_json(path)
        return None if data is None else PidRecord.from_json(data)
    except (ValueError, KeyError, TypeError) as exc:
        log.warning("ignoring unreadable pid file %s: %s", path, exc)
        return None


def pid_file_names(layout: StateLayout) -> list[str]:
    pids = layout.cluster_dir / "pids"
    if not pids.is_dir():
        return []
    return sorted(p.stem for p in pids.glob("*.json") if not p.name.startswith("."))


def remove_pid_file(layout: StateLayout, name: str) -> None:
    layout.pid_file(name).unlink(missing_ok=True)


# --- processes -------------------------------------------------------------------------
_GONE = (FileNotFoundError, ProcessLookupError, PermissionError)


def _stat_fields(pid: int | str) -> list[str]:
    """``/proc/<pid>/stat`` after the command name: state, ppid, pgrp, ...; [] if gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except _GONE:
        return []
    return stat[stat.rfind(")") + 2:].split()


def pid_alive(pid: int) -> bool:
    """True if ``pid`` exists and is not a zombie."""
    fields = _stat_fields(pid)
    return bool(fields) and fields[0] not in ("Z", "X")


def read_cmdline(pid: int, settle: float = 2.0) -> list[str]:
    """The argv of a live process; empty if it is gone or a zombie.

    During ``execve`` (``spark-class`` turning into ``java``) the kernel briefly shows an
    empty cmdline for a live process; it is read again for up to ``settle`` seconds.
    """
    deadline = time.monotonic() + settle
    while True:
        try:
            raw = Path(f"/proc/{pid}/cmdline").read_bytes()
        except _GONE:
            return []
        if raw or not pid_alive(pid) or time.monotonic() >= deadline:
            return [part.decode(errors="replace") for part in raw.split(b"\0") if part]
        time.sleep(0.01)


def cmdline_matches(cmdline: list[str], cmd: list[str]) -> bool:
    """True if ``cmdline`` runs the class and arguments of ``cmd`` (spark-class argv).

    While ``spark-class`` runs its launcher the process is ``bash spark-class <class> ...``;
    after its ``exec`` it is ``java ... <class> ...``; both end with ``cmd[1:]``.
    """
    tail = cmd[1:]
    return bool(tail) and len(cmdline) >= len(tail) and cmdline[-len(tail):] == tail


def reap(pid: int) -> None:
    proc = _CHILDREN.get(pid)
    if proc is not None and proc.poll() is not None:
        del _CHILDREN[pid]


def is_running(record: PidRecord) -> bool:
    """True if the pid of ``record`` is still the daemon it names (not gone, not reused)."""
    reap(record.pid)
    return cmdline_matches(read_cmdline(record.pid), record.cmd)


def group_members(pgid: int) -> list[int]:
    """Pids of live (non-zombie) processes whose process group is ``pgid``."""
    members = []
    for entry in Path("/proc").iterdir():
        fields = _stat_fields(entry.name) if entry.name.isdigit() else []
        if len(fields) > 2 and fields[0] not in ("Z", "X") and int(fields[2]) == pgid:
            members.append(int(entry.name))
    return members


def processes_with_marker(root: Path, daemon: str | None = None) -> list[int]:
    """Live pids started under the cluster at ``root`` (or under one of its daemons).

    Found by the ``STREAMOPS_CLUSTER``/``STREAMOPS_DAEMON`` variables every daemon passes on
    to its drivers, executors and Python workers.
    """
    wanted = {f"{CLUSTER_MARKER}={root}".encode()}
    if daemon is not None:
        wanted.add(f"{DAEMON_MARKER}={daemon}".encode())
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = set((entry / "environ").read_bytes().split(b"\0"))
        except _GONE:
            continue
        if wanted <= environ and pid_alive(int(entry.name)):
            found.append(int(entry.name))
    return found


def sweep(root: Path, daemon: str | None = None, timeout: float = 5.0) -> list[int]:
    """End every process left under the cluster (or one daemon): SIGTERM, then SIGKILL."""
    pids = processes_with_marker(root, daemon)
    for pid in pids:
        _signal(pid, signal.SIGTERM)
    for pid in _wait_gone(pids, timeout):
        _signal(pid, signal.SIGKILL)
    _wait_gone(pids, 2.0)
    return pids


def launch(spec: DaemonSpec, environ: Mapping[str, str] | None = None) -> PidRecord:
    """Start ``spec`` in a new session, output appended to its log; return its record."""
    spec.log.parent.mkdir(parents=True, exist_ok=True)
    Path(spec.env.get("SPARK_CONF_DIR", spec.log.parent)).mkdir(parents=True, exist_ok=True)
    env = process_env(spec, os.environ if environ is None else environ)
    started_at = datetime.now(UTC).isoformat(timespec="seconds")
    with open(spec.log, "ab") as out:
        out.write(f"\n=== {started_at} streamops starting {spec.name}: "
                  f"{shlex.join(spec.argv)}\n".encode())
        out.flush()
        offset = out.tell()
        proc = subprocess.Popen(  # noqa: S603 - argv built from settings, no shell
            spec.argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
            env=env, cwd=spec.log.parent, start_new_session=True,
        )
    _CHILDREN[proc.pid] = proc
    # Popen returns at exec, a moment before /proc/<pid>/cmdline shows the new argv.
    deadline = time.monotonic() + 5.0
    while proc.poll() is None and time.monotonic() < deadline:
        if cmdline_matches(read_cmdline(proc.pid), list(spec.argv)):
            break
        time.sleep(0.01)
    # start_new_session: the daemon leads its own process group, pgid == pid
    return PidRecord(pid=proc.pid, pgid=proc.pid, name=spec.name, kind=spec.kind,
                     ports=dict(spec.ports), started_at=started_at, cmd=list(spec.argv),
                     log=str(spec.log), log_offset=offset)


def _signal(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)


def _wait_gone(pids: Iterable[int], timeout: float) -> set[int]:
    """Wait until none of ``pids`` is alive; return those still alive at the timeout."""
    deadline = time.monotonic() + timeout
    left = set(pids)
    while True:
        for pid in list(left):
            reap(pid)
            if not pid_alive(pid):
                left.discard(pid)
        if not left or time.monotonic() >= deadline:
            return left
        time.sleep(0.1)


def kill_group(pgid: int, timeout: float = 5.0) -> list[int]:
    """``SIGKILL`` every process of group ``pgid``; return the pids killed.

    Only call this when the group is known to be ours: Linux never hands out a pid that is
    still in use as a process group id, so a group whose leader is gone keeps its id until
    its last member exits.
    """
    members = group_members(pgid)
    if not members:
        return []
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        return []
    _wait_gone(members, timeout)
    return members


def stop_daemons(records: list[PidRecord], timeout: float) -> None:
    """Stop daemons together: ``SIGTERM``, wait up to ``timeout``, then kill their groups."""
    running = [r for r in records if is_running(r)]
    for record in running:
        log.info("stopping %s (pid %s) with SIGTERM", record.name, record.pid)
        _signal(record.pid, signal.SIGTERM)
    still = _wait_gone([r.pid for r in running], timeout)
    for record in records:
        leader_alive = record.pid in still
        if not leader_alive and pid_alive(record.pid):
            continue  # pid reused by another program: its group is not ours
        if leader_alive:
            log.warning("%s (pid %s) ignored SIGTERM for %.0fs; killing its process group",
                        record.name, record.pid, timeout)
        killed = kill_group(record.pgid)
        if killed:
            log.info("killed %s process(es) left in the group of %s: %s",
                     len(killed), record.name, killed)
        reap(record.pid)
