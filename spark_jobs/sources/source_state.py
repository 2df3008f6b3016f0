"""What a source knows about its upstream: ``ok``, ``degraded since T: reason``, and losses.

A source's reader on the driver (Spark runs one Python process per source of each query)
keeps a :class:`SourceState` and writes it, on every change, to
``<state_dir>/<source id>/<pid>.json``; the job's status board merges the files of the live
readers into ``status.json`` (``sources_state``), from where health and ``streamops jobs`` read
it. A degraded source returns no new data for a trigger instead of failing its query, and asks
its upstream again after a capped, growing backoff (:meth:`SourceState.due`).

Losses accepted under ``on_source_reset: restart_from_earliest`` are kept in the same file
(``losses``: what was skipped, between which positions) for as long as the job's state root
lives, so that the status always shows them.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import time
from pathlib import Path
from typing import Any

BACKOFF_FIRST_S = 1.0
BACKOFF_MAX_S = 5.0
"""A degraded source asks again after 1, 2, 4, 5, 5, ... seconds. The trade-off: an upstream
that hangs (rather than refuses) holds the trigger of each stage reading it for the probe's
timeout (beta's ``head_timeout``, 2 s) once per interval, delaying the other sources' records
that long; a longer cap delays the return of a recovered upstream instead (with 15 s, beta
was read again 15.8 s after a 30 s freeze ended; ``tests/perf/bench_failover.py``)."""

EVENT_KINDS = ("losses", "late_files", "changed_files", "ignored_files")
"""What a source records for health and status: losses it accepted (``restart_from_earliest``),
files that arrived behind the committed position (``read``: whether they were read, or were
too old), read files that changed or disappeared, and names it does not read (not a ping
file's name)."""

ON_RESET_FAIL = "fail"
ON_RESET_RESTART = "restart_from_earliest"
ON_RESET_CHOICES = (ON_RESET_FAIL, ON_RESET_RESTART)


class SourceResetError(RuntimeError):
    """The upstream no longer holds what the committed offset points at (it was reset,
    replaced, or lost records): reading on would skip records silently, so the stage fails.

    Not transient: relaunching the driver cannot fix it (the job runtime marks the job FAILED
    and does not ask to be relaunched)."""


def source_reset_message(error: str) -> str | None:
    """The message of a :class:`SourceResetError` inside a failed query's error text (Spark
    wraps the Python traceback of the source), or None when the error is another one."""
    found = re.search(r"SourceResetError: (.+)", error)
    return found.group(1).strip() if found else None


def on_reset_policy(options: dict[str, str]) -> str:
    """The source's ``on_source_reset`` option, checked."""
    value = (options.get("on_source_reset") or ON_RESET_FAIL).strip()
    if value not in ON_RESET_CHOICES:
        raise ValueError(
            f"on_source_reset must be one of {', '.join(ON_RESET_CHOICES)}, not {value!r}"
        )
    return value


def _safe(source_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", source_id).strip("_") or "source"


class SourceState:
    """The upstream's state as one reader sees it, written to its own file on each change."""

    def __init__(self, source_id: str, state_dir: str | None, clock: Any = time.time) -> None:
        self.source_id = source_id
        self.clock = clock
        self.path = (
            Path(state_dir) / _safe(source_id) / f"{os.getpid()}.json" if state_dir else None
        )
        self.state = "ok"
        self.since: float | None = None
        self.reason: str | None = None
        self.failures = 0
        self._next_try = 0.0
        self.events: dict[str, list[dict[str, Any]]] = {kind: [] for kind in EVENT_KINDS}

    def due(self) -> bool:
        """Whether to ask the upstream now (always while ok; after the backoff if degraded)."""
        return self.state == "ok" or self.clock() >= self._next_try

    def degraded(self, reason: str) -> None:
        """The upstream did not answer (or answered an error): back off, and report it with the
        count of failed tries (written on each, at most once per backoff interval)."""
        now = self.clock()
        self.failures += 1
        self._next_try = now + min(BACKOFF_MAX_S, BACKOFF_FIRST_S * 2 ** (self.failures - 1))
        if self.state != "degraded":
            self.since = now
        self.state, self.reason = "degraded", reason
        self.write()

    def ok(self) -> None:
        """The upstream answered: back to ``ok`` (reported when it was degraded)."""
        if self.state == "ok":
            return
        self.state, self.since, self.reason, self.failures = "ok", None, None, 0
        self.write()

    def lost(self, **what: Any) -> None:
        """Record a loss accepted by ``on_source_reset: restart_from_earliest``."""
        self.note("losses", **what)

    def note(self, kind: str, **what: Any) -> None:
        """Record an event of ``kind`` (one of :data:`EVENT_KINDS`) and write the state."""
        self.events[kind].append({"at": self.clock(), **what})
        self.write()

    def describe(self) -> str:
        """``ok`` or ``degraded since <time>: <reason>``."""
        if self.state == "ok":
            return "ok"
        since = time.strftime("%H:%M:%S", time.gmtime(self.since or 0))
        return f"degraded since {since} UTC: {self.reason}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source_id,
            "state": self.state,
            "since": self.since,
            "reason": self.reason,
            "failures": self.failures,
            **self.events,
            "pid": os.getpid(),
            "updated_at": self.clock(),
        }

    def write(self) -> None:
        if self.path is None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(self.to_dict(), fh)
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def merge_states(state_dir: str | os.PathLike[str]) -> dict[str, dict[str, Any]]:
    """Per source id, the merged state of its readers: degraded if any live reader is (since
    the earliest), and every event (:data:`EVENT_KINDS`) once. Files of dead readers count for
    their events only; a dead reader without events has its file removed."""
    root = Path(state_dir)
    merged: dict[str, dict[str, Any]] = {}
    if not root.is_dir():
        return merged
    for path in sorted(root.glob("*/*.json")):
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        live = _alive(int(doc.get("pid") or 0))
        if not live and not any(doc.get(kind) for kind in EVENT_KINDS):
            path.unlink(missing_ok=True)
            continue
        source = str(doc.get("source") or path.parent.name)
        entry = merged.setdefault(source, {"state": "ok", "since": None, "reason": None})
        if live and doc.get("state") == "degraded":
            since = doc.get("since")
            if entry["state"] != "degraded" or (since or 0) < (entry["since"] or 0):
                entry.update(state="degraded", since=since, reason=doc.get("reason"))
            entry["failures"] = max(int(entry.get("failures") or 0), int(doc.get("failures") or 0))
        for kind in EVENT_KINDS:
            known = entry.setdefault(kind, [])
            for event in doc.get(kind) or []:
                key = {k: v for k, v in event.items() if k != "at"}
                if all({k: v for k, v in x.items() if k != "at"} != key for x in known):
                    known.append(event)
    for entry in merged.values():
        for kind in EVENT_KINDS:
            if not entry.get(kind):
                entry.pop(kind, None)
    return merged
