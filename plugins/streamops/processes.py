"""Processes the project starts and stops: their specs, pid records and process groups.

Generic to every long-running process of a state root: the Spark daemons
(:mod:`streamops.cluster.daemons` says what they run), the node agents
(:mod:`streamops.agent.processes`) and the background services (:mod:`streamops.services`).
Each process runs in its own session, so it leads a process group holding everything it
starts (drivers, executors, Python workers); stopping one ends with ``SIGKILL`` to that group,
so no JVM outlives it. A pid record is trusted only while ``/proc/<pid>/cmdline`` still ends
with the class and arguments it was started with; otherwise it is stale.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shlex
import signal
import subprocess
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

log = logging.getLogger(__name__)

DaemonKind = Literal["master", "worker", "service"]

CLUSTER_MARKER = "STREAMOPS_CLUSTER"
"""Environment variable set to the state root in every daemon (children inherit it)."""
DAEMON_MARKER = "STREAMOPS_DAEMON"
"""Environment variable set to the daemon's name (children inherit it).

Python workers (``pyspark.daemon``) move to a process group of their own, so killing a
worker's group does not reach them; these two variables find them (and any other
descendant) by ``/proc/<pid>/environ``.
"""

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


# --- pid records -----------------------------------------------------------------------
@dataclass(frozen=True)
class PidRecord:
    """A started process: the content of its pid file (``<state>/cluster/pids/<name>.json``
    for a Spark daemon, ``<state>/services/<name>.json`` for a service)."""

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
