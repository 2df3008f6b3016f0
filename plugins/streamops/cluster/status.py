"""What the local cluster looks like: pid files joined with the master's JSON.

A worker started from this state root is known by its pid file; the master knows it by an
id (``worker-<time>-<host>-<port>``). :func:`match_worker` joins the two: by the worker's
web UI port when it is fixed, else by the RPC address the worker logged at start.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from streamops.cluster import daemons
from streamops.cluster.client import AppInfo, DriverInfo, WorkerInfo
from streamops.cluster.daemons import MASTER_NAME, PidRecord
from streamops.settings import Settings

_WORKER_ADDRESS = re.compile(r"Starting Spark worker (\S+):(\d+) with")


@dataclass(frozen=True)
class WorkerStatus:
    """One worker: ``name`` is ``None`` for a worker this state root did not start."""

    name: str | None
    id: str | None
    state: str
    cores: int
    coresused: int
    memory: int
    memoryused: int
    pid: int | None
    webui: str | None


@dataclass(frozen=True)
class ClusterStatus:
    """The cluster as seen from the pid files and the master's JSON."""

    master_url: str
    webui_url: str
    rest_url: str
    master_alive: bool
    master_status: str | None
    master_pid: int | None
    workers: tuple[WorkerStatus, ...]
    drivers: tuple[DriverInfo, ...]
    apps: tuple[AppInfo, ...]

    @property
    def alive_workers(self) -> tuple[WorkerStatus, ...]:
        return tuple(w for w in self.workers if w.state == "ALIVE")


def worker_address_from_log(record: PidRecord, limit: int = 256 * 1024) -> tuple[str, int] | None:
    """The RPC ``(host, port)`` a worker logged at start (``Starting Spark worker h:p``)."""
    try:
        with open(record.log, "rb") as fh:
            fh.seek(record.log_offset)
            text = fh.read(limit).decode(errors="replace")
    except FileNotFoundError:
        return None
    match = _WORKER_ADDRESS.search(text)
    return (match.group(1), int(match.group(2))) if match else None


def tail(path: Path, lines: int = 20, offset: int = 0) -> str:
    """The last ``lines`` lines of a log, from byte ``offset`` on (for error messages)."""
    try:
        with open(path, "rb") as fh:
            fh.seek(offset)
            data = fh.read()
    except FileNotFoundError:
        return f"(no log at {path})"
    text = data.decode(errors="replace").rstrip("\n")
    return "\n".join(text.splitlines()[-lines:]) or f"(log {path} is empty)"


def match_worker(record: PidRecord, workers: list[WorkerInfo]) -> WorkerInfo | None:
    """The master's entry for the worker of ``record``: by web UI port when it is fixed,
    else by the RPC address in its log. A live entry wins over a dead earlier one."""
    webui = record.ports.get("webui", 0)
    if webui:
        found = [w for w in workers if urlsplit(w.webuiaddress).port == webui]
    else:
        address = worker_address_from_log(record)
        found = [w for w in workers if address and (w.host, w.port) == address]
    if not found:
        return None
    return max(found, key=lambda w: (w.state != "DEAD", w.id))


def worker_sort_key(name: str) -> tuple[int, str]:
    """``worker-2`` before ``worker-10``; custom names after numbered ones."""
    index = daemons.worker_index(name)
    return (index if index is not None else 1 << 30, name)


def _worker_status(
    name: str | None, record: PidRecord | None, entry: WorkerInfo | None, master_up: bool
) -> WorkerStatus:
    pid = record.pid if record else None
    if entry is None:
        return WorkerStatus(name, None, "STARTING" if master_up else "UNKNOWN", 0, 0, 0, 0,
                            pid, None)
    return WorkerStatus(
        name=name, id=entry.id, state=entry.state, cores=entry.cores,
        coresused=entry.coresused, memory=entry.memory, memoryused=entry.memoryused,
        pid=pid, webui=entry.webuiaddress,
    )


def build_status(
    settings: Settings, records: dict[str, PidRecord], state: dict[str, Any] | None
) -> ClusterStatus:
    """Join running daemons (by name) with the master's ``/json/`` (``None``: no answer).

    Workers of this state root come first, in name order; workers registered from elsewhere
    follow with ``name=None``; dead entries of the master's memory are left out.
    """
    entries = [WorkerInfo.from_json(w) for w in (state or {}).get("workers", [])]
    workers, matched = [], set()
    names = sorted((n for n, r in records.items() if r.kind == "worker"), key=worker_sort_key)
    for name in names:
        entry = match_worker(records[name], entries)
        if entry is not None:
            matched.add(entry.id)
        workers.append(_worker_status(name, records[name], entry, state is not None))
    for entry in entries:
        if entry.id not in matched and entry.state != "DEAD":
            workers.append(_worker_status(None, None, entry, True))
    master = records.get(MASTER_NAME)
    return ClusterStatus(
        master_url=settings.master_url,
        webui_url=settings.webui_url,
        rest_url=settings.rest_url,
        master_alive=state is not None,
        master_status=None if state is None else str(state.get("status", "")),
        master_pid=master.pid if master else None,
        workers=tuple(workers),
        drivers=tuple(DriverInfo.from_json(d) for d in (state or {}).get("activedrivers", [])),
        apps=tuple(AppInfo.from_json(a) for a in (state or {}).get("activeapps", [])),
    )
