"""The oracle: what the sinks must hold, recomputed in batch from the simulators' journals.

Every streaming test compares the store with these recomputations over exactly the
records the simulators emitted: zero lost, zero duplicated, zero different.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from streamops.sim.fleet import Ping
from streamops.sim.journal import JournalRecord
from streamops.sim.market import Trade


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


@dataclass(frozen=True)
class Trip:
    end: float
    pings: int
    avg_speed: float
    max_speed: float


def ended_trips(
    pings: Iterable[Ping], gap: float, watermark: float
) -> dict[tuple[str, float], Trip]:
    """Per (VIN, first ping time): the trips (pings whose gaps stay under ``gap`` seconds)
    that have ended by ``watermark``: their last ping plus ``gap`` at or before it."""
    by_vin: dict[str, list[Ping]] = defaultdict(list)
    for p in pings:
        by_vin[p.vin].append(p)
    out: dict[tuple[str, float], Trip] = {}
    for vin, mine in by_vin.items():
        mine.sort(key=lambda p: p.time)
        runs: list[list[Ping]] = []
        for p in mine:
            if runs and p.time < runs[-1][-1].time + gap:
                runs[-1].append(p)
            else:
                runs.append([p])
        for run in runs:
            if run[-1].time + gap <= watermark:
                speeds = [p.speed for p in run]
                out[(vin, run[0].time)] = Trip(
                    run[-1].time, len(run), sum(speeds) / len(speeds), max(speeds)
                )
    return out


def compare_trips(
    expected: Mapping[tuple[str, float], Trip], rows: Iterable[Mapping[str, Any]]
) -> Comparison:
    actual = {(r["vin"], float(r["trip_start"])): r for r in rows}
    cmp = Comparison("trips", len(expected), len(actual))
    cmp.missing = sorted(set(expected) - set(actual))
    cmp.unexpected = sorted(set(actual) - set(expected))
    for key in sorted(set(expected) & set(actual)):
        e, r = expected[key], actual[key]
        distance = e.avg_speed * (e.end - key[1]) / 3600.0
        if not (
            int(r["pings"]) == e.pings
            and _close(float(r["trip_end"]), e.end)
            and _close(float(r["avg_speed"]), e.avg_speed)
            and _close(float(r["max_speed"]), e.max_speed)
            and _close(float(r["distance_mi"]), distance)
        ):
            cmp.different.append((key, e, dict(r)))
    return cmp


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


@dataclass(frozen=True)
class SeriesValue:
    """One window of a trade series: its value (average price or summed quantity), its trades."""

    value: float
    trades: int


@dataclass
class TradeWindows:
    """The windows a trade series must hold, and the (batch, symbol, window end) groups the
    watermark dropped."""

    windows: dict[tuple[str, str, int], SeriesValue]
    dropped: set[tuple[int, str, int]]


def trade_windows(
    batches: Sequence[Iterable[Trade]],
    *,
    series: str,
    size_ms: int,
    slide_ms: int,
    measure: str = "avg_price",
    lag_ms: int | None = None,
    by_frames: bool = False,
) -> TradeWindows:
    """A trade analyser series recomputed in batch: windows ``[start, start + size_ms)`` with
    ``start`` a multiple of ``slide_ms`` (tumbling when equal), keyed ``(series, symbol,
    window end)``, event times in whole milliseconds (:attr:`Trade.time_ms`).

    With ``lag_ms``, Spark's watermark as the batches would see it: 0 in the first batch, then
    the greatest event time of the batches so far minus the lag; a trade's contribution to a
    window that ended at or before it is dropped (the window was closed), to a window still
    open applied. Without, nothing is late (one batch of everything: the producer's order).
    ``by_frames`` (a series computed from its frames, :mod:`spark_jobs.sliding_frames`): a
    trade is late when its frame (``slide_ms`` long) ended at or before the watermark, and is
    then dropped from every window."""
    acc: dict[tuple[str, str, int], list[float]] = defaultdict(list)
    dropped: set[tuple[int, str, int]] = set()
    watermark = 0
    for number, batch in enumerate(batches):
        newest = None
        for t in batch:
            at = t.time_ms
            newest = at if newest is None else max(newest, at)
            start = at - at % slide_ms
            if by_frames and lag_ms is not None and start + slide_ms <= watermark:
                dropped.add((number, t.symbol, start + slide_ms))
                continue
            while start > at - size_ms:
                end = start + size_ms
                if lag_ms is not None and end <= watermark:
                    dropped.add((number, t.symbol, end))
                else:
                    acc[(series, t.symbol, end)].append(
                        t.price if measure == "avg_price" else float(t.quantity)
                    )
                start -= slide_ms
        if lag_ms is not None and newest is not None:
            watermark = max(watermark, newest - lag_ms)
    windows = {
        key: SeriesValue(
            sum(values) / len(values) if measure == "avg_price" else sum(values), len(values)
        )
        for key, values in acc.items()
    }
    return TradeWindows(windows, dropped)


def compare_series(
    expected: Mapping[tuple[str, str, int], SeriesValue],
    rows: Iterable[Mapping[str, Any]],
    what: str = "trade_series",
) -> Comparison:
    """The rows of ``trade_series`` against :func:`trade_windows`: same windows, same counts,
    values equal to float precision."""
    actual = {(r["series"], r["symbol"], int(r["window_end_ms"])): r for r in rows}
    cmp = Comparison(what, len(expected), len(actual))
    cmp.missing = sorted(set(expected) - set(actual))
    cmp.unexpected = sorted(set(actual) - set(expected))
    for key in sorted(set(expected) & set(actual)):
        e, r = expected[key], actual[key]
        if not (int(r["trades"]) == e.trades and _close(float(r["value"]), e.value)):
            cmp.different.append((key, e, dict(r)))
    return cmp
