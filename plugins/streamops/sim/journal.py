"""The oracle journal: every record a simulator emitted, one JSON line each.

Tests compare a job's sink with a batch recomputation over exactly these records. A line::

    {"source": "alpha"|"beta", "sequence": 17, "malformed": false, "reason": null,
     "raw": "<the exact CSV line or JSON text served>", "ping": {...} | null,
     "file": "pings-000000000001.csv" | null}

The trades producer journals its records the same way with ``"source": "trades"``, ``"ping":
null`` and a ``"trade"`` object (a key beta and alpha lines do not carry).

Alpha journals a file's records right after the file is renamed into place; beta when a
record is added to its history. Every line is a single ``write()`` on an ``O_APPEND``
descriptor, so alpha and beta may share one journal file and a reader never sees half a
line except after a crash (:func:`read_journal` skips a truncated last line).
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from streamops.sim.fleet import Ping
from streamops.sim.market import Trade

log = logging.getLogger(__name__)

Source = Literal["alpha", "beta", "trades"]


@dataclass(frozen=True, slots=True)
class JournalRecord:
    """One emitted record: its source, sequence, the raw text and the ping (if valid)."""

    source: Source
    sequence: int
    malformed: bool
    reason: str | None
    raw: str
    ping: Ping | None
    file: str | None = None
    trade: Trade | None = None

    def to_json(self) -> str:
        """The journal line of this record, without the newline."""
        payload: dict[str, Any] = {
            "source": self.source,
            "sequence": self.sequence,
            "malformed": self.malformed,
            "reason": self.reason,
            "raw": self.raw,
            "ping": None if self.ping is None else self.ping.to_dict(),
            "file": self.file,
        }
        if self.trade is not None:
            payload["trade"] = self.trade.to_dict()
        return json.dumps(payload, separators=(",", ":"))

    @classmethod
    def from_json(cls, line: str) -> JournalRecord:
        """Parse one journal line."""
        data = json.loads(line)
        ping, trade = data.get("ping"), data.get("trade")
        return cls(
            source=data["source"],
            sequence=int(data["sequence"]),
            malformed=bool(data["malformed"]),
            reason=data.get("reason"),
            raw=data["raw"],
            ping=None if ping is None else Ping.from_dict(ping),
            file=data.get("file"),
            trade=None if trade is None else Trade.from_dict(trade),
        )


class JournalWriter:
    """Appends journal lines to ``path``: one unbuffered ``write()`` per line."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fd: int | None = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self._lock = threading.Lock()

    def append(self, records: Iterable[JournalRecord]) -> None:
        """Write each record as one line."""
        with self._lock:
            if self._fd is None:
                raise ValueError(f"journal {self.path} is closed")
            for record in records:
                data = (record.to_json() + "\n").encode("utf-8")
                written = os.write(self._fd, data)
                while written < len(data):  # never seen on regular files; be correct anyway
                    written += os.write(self._fd, data[written:])

    def close(self) -> None:
        """Close the file; further appends fail."""
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None


def read_journal(path: str | os.PathLike[str]) -> list[JournalRecord]:
    """All records of a journal, in file order; a truncated last line is skipped."""
    records: list[JournalRecord] = []
    text = Path(path).read_text(encoding="utf-8")
    lines = text.split("\n")
    if lines and lines[-1]:
        log.warning("journal %s ends with a truncated line; skipped", path)
    for line in lines[:-1]:
        if line:
            records.append(JournalRecord.from_json(line))
    return records


def valid_pings(records: Iterable[JournalRecord], source: Source | None = None) -> list[Ping]:
    """The pings of the well-formed records (of one ``source`` if given), in journal order."""
    return [
        r.ping
        for r in records
        if r.ping is not None and not r.malformed and (source is None or r.source == source)
    ]


def valid_trades(records: Iterable[JournalRecord]) -> list[Trade]:
    """The trades of a trades producer's journal, in journal order."""
    return [r.trade for r in records if r.trade is not None and not r.malformed]


def malformed_records(
    records: Iterable[JournalRecord], source: Source | None = None
) -> list[JournalRecord]:
    """The malformed records (of one ``source`` if given), in journal order."""
    return [r for r in records if r.malformed and (source is None or r.source == source)]
