"""What fleet_alpha remembers of the files it read, carried in its offset.

Spark's own file source keeps every file it has read in a map (``SeenFilesMap``) whose entries
it purges once they are ``maxFileAge`` older than the newest file it has seen; a file is new
when it is not in the map and not older than that bound. fleet_alpha keeps the same memory,
but in its offset, so that checkpoints and savepoints carry it, and compactly:

- ``file``: the greatest name read (the position: savepoints, the restore planner, health);
- ``read``: the names read, as runs of consecutive numbers (``[[first, last], ...]``; the
  writer numbers its files one by one, so this is one run while files arrive in order);
- ``floor`` and ``floor_time``: the runs whose files all fell out of the bound, folded: a
  name at or below ``floor`` whose file is no newer than ``floor_time`` counts as read;
- ``latest``: the modification time of the newest file read; files older than
  ``latest - max_file_age`` that were not read are too old to be read now.

An offset written before this memory, ``{"source", "file"}`` (also a ``start_after``
position), reads as a floor at ``file`` without runs: every file at or below it that is no
newer than the committed file counts as read, as it did.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field, replace
from typing import Any

NAME = re.compile(r"^pings-(\d+)\.csv$")
Key = tuple[int, int]
"""A ping file name as ``(digits, number)``: ``pings-007.csv`` is ``(3, 7)``."""

_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
DEFAULT_MAX_FILE_AGE = "7d"
"""As Spark's file source (``maxFileAge``)."""


def parse_age(text: str) -> float:
    """Seconds of ``max_file_age``: a number of seconds, or with a unit ``s``, ``m``, ``h``,
    ``d`` (``"90s"``, ``"1h"``, ``"7d"``)."""
    found = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*", text)
    if not found:
        raise ValueError(f"max_file_age must be seconds or a number with s, m, h or d: {text!r}")
    return float(found.group(1)) * _UNITS[found.group(2) or "s"]


def key_of(name: str) -> Key | None:
    found = NAME.match(name)
    return (len(found.group(1)), int(found.group(1))) if found else None


def name_of(width: int, number: int) -> str:
    return f"pings-{number:0{width}d}.csv"


@dataclass(frozen=True)
class Memory:
    """The files an offset of fleet_alpha counts as read (see the module's docstring)."""

    file: str
    floor: str
    floor_time: float | None  # None: an offset without memory (resolved by the reader)
    latest: float | None
    runs: dict[int, list[tuple[int, int]]] = field(default_factory=dict)  # width → runs

    @classmethod
    def from_offset(cls, offset: dict[str, Any]) -> Memory:
        position = str(offset.get("file") or "")
        if "read" not in offset:
            return cls(position, position, None, None)
        runs: dict[int, list[tuple[int, int]]] = {}
        for first, last in offset["read"]:
            lo, hi = key_of(str(first)), key_of(str(last))
            if lo is None or hi is None or lo[0] != hi[0]:
                raise ValueError(f"not a run of fleet_alpha file names: {first}..{last}")
            runs.setdefault(lo[0], []).append((lo[1], hi[1]))
        latest = offset.get("latest")
        return cls(
            position, str(offset.get("floor") or ""), float(offset.get("floor_time") or 0.0),
            None if latest is None else float(latest), {w: sorted(r) for w, r in runs.items()},
        )  # fmt: skip

    def to_offset(self, source: str) -> dict[str, Any]:
        return {
            "source": source,
            "file": self.file,
            "floor": self.floor,
            "floor_time": self.floor_time or 0.0,
            "latest": self.latest,
            "read": [[name_of(w, lo), name_of(w, hi)] for w, lo, hi in self._sorted_runs()],
        }

    def _sorted_runs(self) -> list[tuple[int, int, int]]:
        flat = [(w, lo, hi) for w, runs in self.runs.items() for lo, hi in runs]
        return sorted(flat, key=lambda r: name_of(r[0], r[1]))

    def has(self, name: str) -> bool:
        """Whether ``name`` is in the runs of names read."""
        key = key_of(name)
        if key is None:
            return False
        runs = self.runs.get(key[0], [])
        i = bisect.bisect_right(runs, (key[1], float("inf"))) - 1
        return i >= 0 and runs[i][0] <= key[1] <= runs[i][1]

    def below_floor(self, name: str, mtime: float) -> bool:
        """Whether ``name`` counts as read by the folded part of the memory."""
        return name <= self.floor and mtime <= (self.floor_time or 0.0)

    def with_read(self, names: list[str], mtimes: dict[str, float]) -> Memory:
        """This memory with ``names`` read (their modification times in ``mtimes``)."""
        runs = {w: list(r) for w, r in self.runs.items()}
        for name in names:
            key = key_of(name)
            assert key is not None, name
            _insert(runs.setdefault(key[0], []), key[1])
        newest = max(mtimes[n] for n in names)
        return replace(
            self, file=max([self.file, *names]), runs=runs,
            latest=newest if self.latest is None else max(self.latest, newest),
        )  # fmt: skip

    def pruned(
        self, upto: str, horizon: float, mtimes: dict[str, float], keep: list[str]
    ) -> Memory:
        """Fold into the floor, in name order, the runs at or below ``upto`` whose present
        files are all older than ``horizon`` (their names can no longer be read again), up to
        the first run holding a name of ``keep`` (the batch's: it must tell them apart)."""
        floor, floor_time = self.floor, self.floor_time or 0.0
        runs = {w: list(r) for w, r in self.runs.items()}
        kept = [k for k in map(key_of, keep) if k is not None]
        for w, lo, hi in self._sorted_runs():
            last = mtimes.get(name_of(w, hi))
            if name_of(w, hi) > upto or (last is not None and last >= horizon):
                break
            if any(k[0] == w and lo <= k[1] <= hi for k in kept):
                break
            times = [t for n in range(lo, hi + 1) if (t := mtimes.get(name_of(w, n))) is not None]
            if any(t >= horizon for t in times):
                break
            floor = max(floor, name_of(w, hi))
            floor_time = max([floor_time, *times])
            runs[w].remove((lo, hi))
        return replace(self, floor=floor, floor_time=floor_time,
                       runs={w: r for w, r in runs.items() if r})  # fmt: skip

    def unread(self, mtimes: dict[str, float], max_age: float) -> list[str]:
        """Of the ping files in ``mtimes`` (name → modification time), those the batches
        after this offset will read: above the position, or late and within ``max_age``.
        (An offset without memory: the files above its position.)"""
        horizon = -float("inf") if self.latest is None else self.latest - max_age
        out = []
        for name, mtime in mtimes.items():
            if key_of(name) is None or self.has(name):
                continue
            if name > self.file or (
                self.floor_time is not None
                and not self.below_floor(name, mtime)
                and mtime >= horizon
            ):
                out.append(name)
        return sorted(out)

    def names_not_in(self, before: Memory) -> list[str]:
        """The names in this memory's runs that are not in ``before``'s: what the batch
        between the two offsets read, in name order."""
        out = []
        for w, lo, hi in self._sorted_runs():
            for a, b in _minus((lo, hi), before.runs.get(w, [])):
                out.extend(name_of(w, n) for n in range(a, b + 1))
        return sorted(out)


def _minus(run: tuple[int, int], others: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The parts of ``run`` outside the sorted, disjoint ``others``."""
    lo, hi = run
    out = []
    for a, b in others:
        if b < lo or a > hi:
            continue
        if a > lo:
            out.append((lo, a - 1))
        lo = max(lo, b + 1)
    if lo <= hi:
        out.append((lo, hi))
    return out


def _insert(runs: list[tuple[int, int]], number: int) -> None:
    """Add ``number`` to sorted, disjoint ``runs``, merging neighbours."""
    i = bisect.bisect_left(runs, (number, number))
    if i > 0 and runs[i - 1][1] >= number:
        return  # already in the run before
    if i < len(runs) and runs[i][0] == number:
        return
    joins_left = i > 0 and runs[i - 1][1] == number - 1
    joins_right = i < len(runs) and runs[i][0] == number + 1
    if joins_left and joins_right:
        runs[i - 1 : i + 1] = [(runs[i - 1][0], runs[i][1])]
    elif joins_left:
        runs[i - 1] = (runs[i - 1][0], number)
    elif joins_right:
        runs[i] = (number, runs[i][1])
    else:
        runs.insert(i, (number, number))
