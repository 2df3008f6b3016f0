"""What the local cluster looks like: pid files joined with the master's JSON.

A worker started from this state root is known by its pid file and its node name; the master
knows it by an id (``worker-<time>-<host>-<port>``). :mod:`streamops.cluster.worker_names`
joins the two. Workers the master remembers as DEAD or DECOMMISSIONED and that no running
worker of ours replaced are kept apart (``ClusterStatus.gone``), so views can list them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from streamops.cluster import daemons
from streamops.cluster.client import AppInfo, DriverInfo, WorkerInfo
from streamops.cluster.daemons import MASTER_NAME
from streamops.cluster.worker_names import WorkerNames, match_worker, worker_names
from streamops.processes import PidRecord
from streamops.settings import Settings

__all__ = ["ClusterStatus", "WorkerStatus", "build_status", "match_worker", "tail",
           "worker_sort_key"]

GONE_STATES = frozenset({"DEAD", "DECOMMISSIONED"})
"""States of a worker the master remembers but that no longer runs."""


@dataclass(frozen=True)
class WorkerStatus:
    """One worker: ``name`` is its node name, ``None`` for a worker this state root did not
    start; ``address`` is its RPC ``host:port`` as the master lists it."""

    name: str | None
    id: str | None
    state: str
    cores: int
    coresused: int
    memory: int
    memoryused: int
    pid: int | None
    webui: str | None
    address: str | None = None


@dataclass(frozen=True)
class ClusterStatus:
    """The cluster as seen from the pid files and the master's JSON.

    ``workers``: the running workers of this state root (by node name) and live workers
    registered from elsewhere; ``gone``: DEAD or DECOMMISSIONED entries the master still
    lists, newest first, named when this state root started them."""

    master_url: str
    webui_url: str
    rest_url: str
    master_alive: bool
    master_status: str | None
    master_pid: int | None
    workers: tuple[WorkerStatus, ...]
    drivers: tuple[DriverInfo, ...]
    apps: tuple[AppInfo, ...]
    gone: tuple[WorkerStatus, ...] = ()
    names: WorkerNames = WorkerNames({}, {})

    @property
    def alive_workers(self) -> tuple[WorkerStatus, ...]:
        return tuple(w for w in self.workers if w.state == "ALIVE")


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
        pid=pid, webui=entry.webuiaddress, address=f"{entry.host}:{entry.port}",
    )


def build_status(
    settings: Settings, records: dict[str, PidRecord], state: dict[str, Any] | None
) -> ClusterStatus:
    """Join running daemons (by name) with the master's ``/json/`` (``None``: no answer).

    Workers of this state root come first, in name order; live workers registered from
    elsewhere follow with ``name=None``; DEAD and DECOMMISSIONED entries go to ``gone``.
    """
    entries = [WorkerInfo.from_json(w) for w in (state or {}).get("workers", [])]
    workers = {n: r for n, r in records.items() if r.kind == "worker"}
    names = worker_names(settings.layout.logs_dir, entries, workers)
    listed, matched = [], set()
    for name in sorted(workers, key=worker_sort_key):
        entry = match_worker(workers[name], entries)
        if entry is not None:
            matched.add(entry.id)
        listed.append(_worker_status(name, workers[name], entry, state is not None))
    gone = []
    for entry in sorted(entries, key=lambda e: e.id, reverse=True):
        if entry.id in matched:
            continue
        named = _worker_status(names.names.get(entry.id), None, entry, True)
        (gone if entry.state in GONE_STATES else listed).append(named)
    master = records.get(MASTER_NAME)
    return ClusterStatus(
        master_url=settings.master_url,
        webui_url=settings.webui_url,
        rest_url=settings.rest_url,
        master_alive=state is not None,
        master_status=None if state is None else str(state.get("status", "")),
        master_pid=master.pid if master else None,
        workers=tuple(listed),
        drivers=tuple(DriverInfo.from_json(d) for d in (state or {}).get("activedrivers", [])),
        apps=tuple(AppInfo.from_json(a) for a in (state or {}).get("activeapps", [])),
        gone=tuple(gone),
        names=names,
    )
