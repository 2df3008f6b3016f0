"""What a node agent's supervisor knows of its daemon: the record it keeps on disk.

``<state>/cluster/supervision/<node>.json`` (written by the node's agent only) says whether
the daemon should run (``keep_running``: set by a start request, cleared by a stop, kill or
decommission request), what the supervisor last saw and did (``state``, ``last``), and its
recent restarts. ``cluster status`` and health read it (:func:`read_all`); the restart
policy (:class:`RestartPolicy`) comes from the cluster profile.
"""

from __future__ import annotations

import logging
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from streamops.state.layout import StateLayout, read_record, write_json_atomic
from streamops_contract.names import check_name

log = logging.getLogger("streamops.agent")

KEEP_ATTEMPTS = 20  # restart attempts kept in a record (the window counts the recent ones)


@dataclass(frozen=True)
class RestartPolicy:
    """How a supervisor restarts its daemon: the first restart at once, each next one of
    the window after ``backoff`` seconds doubled per restart (at most ``max_delay``); more
    than ``limit`` restarts within ``window`` seconds and it gives up. ``limit`` 0: no
    supervision. ``interval``: seconds between two looks at the daemon."""

    limit: int = 5
    window: float = 600.0
    backoff: float = 2.0
    max_delay: float = 60.0
    interval: float = 1.0

    def delay(self, recent: int) -> float:
        """Seconds between the last restart and the next, ``recent`` restarts in the window."""
        return 0.0 if recent == 0 else min(self.backoff * 2 ** (recent - 1), self.max_delay)


@dataclass
class Attempt:
    """One restart the supervisor made: when, whether the daemon came up, its new pid, the
    seconds from noticing it dead to it running again (or the error)."""

    at: float
    ok: bool
    pid: int | None
    seconds: float
    error: str | None = None

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Attempt:
        pid = data.get("pid")
        return cls(float(data["at"]), bool(data["ok"]), int(pid) if pid else None,
                   float(data.get("seconds") or 0), data.get("error"))


@dataclass
class SupervisionRecord:
    """The supervisor's record of one node's daemon (see the module's doc)."""

    node: str
    role: str
    agent_pid: int
    limit: int
    window: float
    keep_running: bool = False
    state: str = "idle"  # idle | running | down | backoff | restarting | gave-up | stopped
    reason: str = "not started by this agent"  # why keep_running is what it is
    pid: int | None = None  # the daemon's pid last seen running
    restarts: list[Attempt] = field(default_factory=list)  # newest last
    counted_from: float = 0.0  # restarts before this (a start request) do not count
    total_restarts: int = 0
    gave_up_at: float | None = None
    last: str = ""  # the last thing the supervisor said
    last_at: float = 0.0

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SupervisionRecord:
        pid = data.get("pid")
        gave_up = data.get("gave_up_at")
        return cls(
            node=str(data["node"]), role=str(data["role"]), agent_pid=int(data["agent_pid"]),
            limit=int(data["limit"]), window=float(data["window"]),
            keep_running=bool(data.get("keep_running")), state=str(data.get("state", "idle")),
            reason=str(data.get("reason", "")), pid=int(pid) if pid else None,
            restarts=[Attempt.from_json(a) for a in data.get("restarts") or []],
            counted_from=float(data.get("counted_from") or 0),
            total_restarts=int(data.get("total_restarts") or 0),
            gave_up_at=float(gave_up) if gave_up else None,
            last=str(data.get("last", "")), last_at=float(data.get("last_at") or 0),
        )

    def recent(self, now: float) -> list[Attempt]:
        """The restarts that count against the limit at ``now``."""
        since = max(now - self.window, self.counted_from)
        return [a for a in self.restarts if a.at >= since]

    def said(self, message: str, now: float | None = None) -> None:
        self.last, self.last_at = message, time.time() if now is None else now

    def add(self, attempt: Attempt) -> None:
        self.restarts = [*self.restarts, attempt][-KEEP_ATTEMPTS:]
        self.total_restarts += 1


def record_file(layout: StateLayout, node: str) -> Path:
    return layout.cluster_dir / "supervision" / f"{check_name('node', node)}.json"


def write(layout: StateLayout, record: SupervisionRecord) -> None:
    write_json_atomic(record_file(layout, record.node), asdict(record))


def read(layout: StateLayout, node: str) -> SupervisionRecord | None:
    """The record of ``node``'s supervisor (``None``: none or unreadable, with a warning)."""
    return read_record(record_file(layout, node), SupervisionRecord.from_json,
                       "supervision record")  # fmt: skip


def read_all(layout: StateLayout) -> dict[str, SupervisionRecord]:
    """Every node's supervision record, by node name."""
    folder = layout.cluster_dir / "supervision"
    if not folder.is_dir():
        return {}
    found = (read(layout, p.stem) for p in sorted(folder.glob("*.json")))
    return {r.node: r for r in found if r is not None}
