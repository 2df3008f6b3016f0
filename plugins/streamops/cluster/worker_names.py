"""One name per worker: the node name (``worker-2``) for whatever the master calls it.

The master knows a worker by an id (``worker-20250101120000-127.0.0.1-34005``) and an RPC
address (``127.0.0.1:34005``), drivers by the id of their worker. The state root knows the
node names: a running worker by its pid file, any worker it ever started by its log
(``<state>/cluster/logs/<node>.log`` records ``Starting Spark worker host:port`` at every
start). :func:`worker_names` maps the master's ids to node names once; every view (``jobs``,
``cluster status``, the health checks, scale) shows that name, the address beside it where
useful (:func:`worker_label`). A worker this state root did not start keeps its address.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from streamops.cluster.client import WorkerInfo
from streamops.processes import PidRecord

_WORKER_START = re.compile(r"Starting Spark worker (\S+):(\d+) with")
LOG_TAIL = 8 * 1024 * 1024
"""Bytes read from the end of each worker log."""


_OVERLAP = 256  # bytes read again before the last scanned offset: a line cut in two
_SCANNED: dict[Path, tuple[int, dict[tuple[str, int], str]]] = {}
"""Per worker log: bytes scanned so far and the starts found in them (each view reads only
what the log gained since)."""


def _scan(log_file: Path, tail: int) -> dict[tuple[str, int], str]:
    try:
        size = log_file.stat().st_size
    except FileNotFoundError:
        return {}
    done, found = _SCANNED.get(log_file, (0, {}))
    if size < done:  # truncated or replaced: start again
        done, found = 0, {}
    start = max(done - _OVERLAP, size - tail, 0)
    if start < size:
        with open(log_file, "rb") as fh:
            fh.seek(start)
            text = fh.read().decode(errors="replace")
        found = dict(found)
        for match in _WORKER_START.finditer(text):
            found[(match.group(1), int(match.group(2)))] = log_file.stem
    _SCANNED[log_file] = (size, found)
    return found


def started_addresses(logs_dir: Path, tail: int = LOG_TAIL) -> dict[tuple[str, int], str]:
    """``(host, port)`` → node name of every worker start logged under ``logs_dir`` (the
    latest start at an address wins)."""
    files = []
    for log_file in logs_dir.glob("worker*.log"):
        with contextlib.suppress(FileNotFoundError):
            files.append((log_file.stat().st_mtime_ns, log_file))
    found: dict[tuple[str, int], str] = {}
    for _, log_file in sorted(files):
        found.update(_scan(log_file, tail))
    return found


def worker_address_from_log(record: PidRecord, limit: int = 256 * 1024) -> tuple[str, int] | None:
    """The RPC ``(host, port)`` a worker logged at start (``Starting Spark worker h:p``)."""
    try:
        with open(record.log, "rb") as fh:
            fh.seek(record.log_offset)
            text = fh.read(limit).decode(errors="replace")
    except FileNotFoundError:
        return None
    match = _WORKER_START.search(text)
    return (match.group(1), int(match.group(2))) if match else None


def match_worker(record: PidRecord, workers: list[WorkerInfo]) -> WorkerInfo | None:
    """The master's entry for the running worker of ``record``: by web UI port when it is
    fixed, else by the RPC address in its log. A live entry wins over a dead earlier one."""
    webui = record.ports.get("webui", 0)
    if webui:
        found = [w for w in workers if urlsplit(w.webuiaddress).port == webui]
    else:
        logged = worker_address_from_log(record)
        found = [w for w in workers if logged and (w.host, w.port) == logged]
    if not found:
        return None
    return max(found, key=lambda w: (w.state != "DEAD", w.id))


def address(worker: WorkerInfo) -> str:
    """``host:port`` of a worker as the master lists it."""
    return f"{worker.host}:{worker.port}"


def worker_label(name: str | None, address: str | None) -> str:
    """``worker-2 (127.0.0.1:34005)``; the address alone for a worker that has no name."""
    if name and address and name != address:
        return f"{name} ({address})"
    return name or address or "-"


@dataclass(frozen=True)
class WorkerNames:
    """The master's worker ids mapped to node names (and their addresses)."""

    names: Mapping[str, str]
    addresses: Mapping[str, str]

    def name(self, worker_id: str) -> str | None:
        """The node name of master worker ``worker_id`` (its address if it has none)."""
        return self.names.get(worker_id) or self.addresses.get(worker_id) or worker_id or None

    def address(self, worker_id: str) -> str | None:
        return self.addresses.get(worker_id)

    def label(self, worker_id: str) -> str:
        """``worker-2 (127.0.0.1:34005)`` for master worker ``worker_id``."""
        return worker_label(self.name(worker_id), self.address(worker_id))


def worker_names(
    logs_dir: Path,
    entries: Iterable[WorkerInfo],
    records: Mapping[str, PidRecord] | None = None,
) -> WorkerNames:
    """Name every worker the master lists (``entries``): by the pid file of a running worker
    of this state root (``records``), else by the worker log that started at its address."""
    listed = list(entries)
    names: dict[str, str] = {}
    for node, record in (records or {}).items():
        if record.kind == "worker" and (entry := match_worker(record, listed)) is not None:
            names[entry.id] = node
    logged = started_addresses(logs_dir) if len(names) < len(listed) else {}
    for entry in listed:
        if entry.id not in names and (node := logged.get((entry.host, entry.port))):
            names[entry.id] = node
    return WorkerNames(names, {e.id: address(e) for e in listed})
