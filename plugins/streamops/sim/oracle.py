"""The oracle: what the sinks must hold, recomputed in batch from the simulators' journals.

Every streaming test compares the store with these recomputations over exactly the
records the simulators emitted: zero lost, zero duplicated, zero different.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from streamops.sim.fleet import Ping
from streamops.sim.journal import JournalRecord


@dataclass(frozen=True)
class WindowStats:
    pings: int
    avg_speed: float
    max_speed: float


@dataclass
class Comparison:
    """Differences between what a sink holds and what it should hold."""

    what: str
    expected: int
    actual: int
    missing: list[Any] = field(default_factory=list)
    unexpected: list[Any] = field(default_factory=list)
    different: list[Any] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (self.missing or self.unexpected or self.different)

    def summary(self) -> str:
        head = (
            f"{self.what}: expected {self.expected} rows, found {self.actual}; "
            f"{len(self.missing)} missing, {len(self.unexpected)} unexpected, "
            f"{len(self.different)} different"
        )
        samples = [("missing", self.missing), ("unexpected", self.unexpected),
                   ("different", self.different)]  # fmt: skip
        details = [f"  first {k}: {v[:3]}" for k, v in samples if v]
        return "\n".join([head, *details])


def latest_per_vin(pings: Iterable[Ping]) -> dict[str, Ping]:
    """The newest ping of each VIN by (event time, sequence): the ``vehicles`` contract."""
    latest: dict[str, Ping] = {}
    for p in pings:
        cur = latest.get(p.vin)
        if cur is None or (p.time, p.sequence) > (cur.time, cur.sequence):
            latest[p.vin] = p
    return latest


def tumbling_windows(
    pings: Iterable[Ping], size: float = 60.0
) -> dict[tuple[str, float], WindowStats]:
    """Per (VIN, window start): count, average and max speed over ``size``-second windows."""
    acc: dict[tuple[str, float], list[float]] = defaultdict(list)
    for p in pings:
        acc[(p.vin, math.floor(p.time / size) * size)].append(p.speed)
    return {
        key: WindowStats(len(speeds), sum(speeds) / len(speeds), max(speeds))
        for key, speeds in acc.items()
    }


def sliding_windows(
    pings: Iterable[Ping], size: float = 300.0, slide: float = 60.0
) -> dict[tuple[str, float], WindowStats]:
    """Per (VIN, window start) over windows of ``size`` seconds starting every ``slide``."""
    acc: dict[tuple[str, float], list[float]] = defaultdict(list)
    for p in pings:
        last_start = math.floor(p.time / slide) * slide
        start = last_start
        while start > p.time - size:
            acc[(p.vin, start)].append(p.speed)
            start -= slide
    return {
        key: WindowStats(len(speeds), sum(speeds) / len(speeds), max(speeds))
        for key, speeds in acc.items()
    }


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)


def compare_vehicles(expected: Mapping[str, Ping], rows: Iterable[Mapping[str, Any]]) -> Comparison:
    actual = {r["vin"]: r for r in rows}
    cmp = Comparison("vehicles", len(expected), len(actual))
    cmp.missing = sorted(set(expected) - set(actual))
    cmp.unexpected = sorted(set(actual) - set(expected))
    for vin in sorted(set(expected) & set(actual)):
        p, r = expected[vin], actual[vin]
        same = r["sequence"] == p.sequence and all(
            _close(float(r[f]), float(getattr(p, f)))
            for f in ("time", "latitude", "longitude", "speed", "heading")
        )
        if not same:
            cmp.different.append((vin, p, dict(r)))
    return cmp


def compare_windows(
    expected: Mapping[tuple[str, float], WindowStats],
    rows: Iterable[Mapping[str, Any]],
    what: str = "vehicle_stats",
) -> Comparison:
    actual = {(r["vin"], float(r["window_start"])): r for r in rows}
    cmp = Comparison(what, len(expected), len(actual))
    cmp.missing = sorted(set(expected) - set(actual))
    cmp.unexpected = sorted(set(actual) - set(expected))
    for key in sorted(set(expected) & set(actual)):
        e, r = expected[key], actual[key]
        if not (
            int(r["pings"]) == e.pings
            and _close(float(r["avg_speed"]), e.avg_speed)
            and _close(float(r["max_speed"]), e.max_speed)
        ):
            cmp.different.append((key, e, dict(r)))
    return cmp


def quarantine_key(record: JournalRecord) -> tuple[str, str]:
    """How a malformed record is identified in ``quarantine``: (source, position prefix)."""
    if record.source == "beta":
        return ("beta", str(record.sequence))
    return ("alpha", f"{record.file}:{record.raw}")


def compare_quarantine(
    malformed: Iterable[JournalRecord], rows: Iterable[Mapping[str, Any]]
) -> Comparison:
    """Every malformed record is quarantined once, with a reason; nothing else is."""
    expected = {quarantine_key(r) for r in malformed}
    actual: set[tuple[str, str]] = set()
    no_reason = []
    for r in rows:
        if r["source"] == "beta":
            actual.add(("beta", str(r["position"])))
        else:
            actual.add(("alpha", f"{str(r['position']).split(':', 1)[0]}:{r['raw']}"))
        if not r.get("reason"):
            no_reason.append(dict(r))
    cmp = Comparison("quarantine", len(expected), len(actual))
    cmp.missing = sorted(expected - actual)
    cmp.unexpected = sorted(actual - expected)
    cmp.different = no_reason
    return cmp
