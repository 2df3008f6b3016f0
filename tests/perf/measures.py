"""What the benchmarks' figures mean, as pure functions of what a benchmark recorded.

One definition each, shared by every benchmark that prints the figure and stated the same way
in ``docs/performance.md`` ("How the benchmarks measure"); unit-tested in
``tests/unit/perf/test_measures.py``:

- **kept up** (:func:`keeping_up`): every stage processed at least :data:`KEEP_UP_SHARE` of the
  offered rate over the window, *and* no stage's backlog grew over it by more than a batch's
  worth (:class:`Backlog`);
- **the goal's ratio** (:func:`goal_ratio`): offered at a factor (1.3) of the goal rate, the
  slowest stage's processed rate over the goal rate; the busy-share figure stays beside it as
  an estimate (:func:`headroom_estimate`);
- **the gap** of an operation (:class:`Gap`): the longest pause of any stage across it, with
  the figure of the stage that committed first after it beside;
- **latency** (:class:`Latencies`): every event's, from the store's own stamp of the write
  that made it visible; an event not written by the end of the measurement is *late*: counted,
  and taken into the percentiles at the time it had waited then (a lower bound), never dropped.
"""

from __future__ import annotations

import bisect
import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise

KEEP_UP_SHARE = 0.95
"""The share of the offered rate every stage must process over the window to keep up."""


# --- kept up --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Backlog:
    """What one stage had yet to read of one source, in the source's own units (records, or
    files for fleetsim-alpha), at its first and at its last commit in the window.

    At a commit, a stage that keeps up has left about what arrived while its batch ran: the
    backlog then swings by up to a batch's worth from one commit to another without growing.
    ``allowance`` is that batch's worth: the source's offered rate times the stage's longest
    batch in the window. The backlog *grew* when it rose by more than that."""

    stage: str
    source: str
    first: float
    last: float
    allowance: float

    @property
    def growth(self) -> float:
        return self.last - self.first

    @property
    def grew(self) -> bool:
        return self.growth > self.allowance

    def describe(self) -> str:
        return (
            f"{self.source} backlog of {self.stage}: {self.first:,.0f} → {self.last:,.0f} "
            f"({self.growth:+,.0f}; a batch's worth {self.allowance:,.0f})"
        )


def head_at(heads: Sequence[tuple[float, float]], at: float) -> float:
    """The source's head (what it had offered) at ``at``, linear between the ``(time, head)``
    samples (in time order), the nearest sample outside them."""
    if not heads:
        raise ValueError("no head sample")
    times = [t for t, _ in heads]
    i = bisect.bisect_left(times, at)
    if i == 0:
        return heads[0][1]
    if i == len(heads):
        return heads[-1][1]
    (ta, ha), (tb, hb) = heads[i - 1], heads[i]
    return ha if tb == ta else ha + (hb - ha) * (at - ta) / (tb - ta)


def backlog(
    stage: str, source: str, heads: Sequence[tuple[float, float]],
    commits: Sequence[tuple[float, float]], rate: float, longest_batch_s: float,
) -> Backlog | None:  # fmt: skip
    """The :class:`Backlog` of ``stage`` on ``source`` from its ``commits`` in the window
    (``(commit time, position committed)``, in order) and the source's ``heads``; ``rate``:
    the source's offered rate (its units per second). None with fewer than two commits: no
    growth can be told (and the stage then processed too little to keep up anyway)."""
    if len(commits) < 2:
        return None
    (t_first, p_first), (t_last, p_last) = commits[0], commits[-1]
    return Backlog(stage, source, head_at(heads, t_first) - p_first,
                   head_at(heads, t_last) - p_last, rate * longest_batch_s)  # fmt: skip


def keeping_up(
    processed: Mapping[str, float], offered: float, backlogs: Sequence[Backlog | None]
) -> tuple[bool, str]:
    """Whether the job kept up with ``offered`` (per second) over the window, and why not:
    every stage's ``processed`` rate at least :data:`KEEP_UP_SHARE` of it, and every backlog
    measured and grown by no more than its allowance."""
    if not processed:
        return False, "no stage committed a batch in the window"
    slow = {s: r for s, r in processed.items() if r < KEEP_UP_SHARE * offered}
    if slow:
        worst = min(slow, key=lambda s: slow[s])
        share = slow[worst] / offered if offered else 0.0
        return False, f"{worst} processed {share:.0%} of the offered rate"
    if not backlogs or any(b is None for b in backlogs):
        return False, "a stage committed fewer than two batches in the window"
    grown = [b for b in backlogs if b is not None and b.grew]
    if grown:
        return False, "the backlog grew: " + "; ".join(b.describe() for b in grown)
    return True, "kept up"


def kept_up(
    processed: Mapping[str, float], offered: float, backlogs: Sequence[Backlog | None]
) -> bool:
    """:func:`keeping_up`'s verdict alone."""
    return keeping_up(processed, offered, backlogs)[0]


def headroom_estimate(busy: Sequence[float], kept: bool) -> str:
    """An *estimate* of the headroom from the stages' busy shares (the sum of a stage's batch
    durations over the window): a stage busy a share ``b`` of the time could take about
    ``1 / b`` times its rate before its batches run back to back. Only while the job kept up
    with batches shorter than their trigger; the measured figure is :func:`goal_ratio`."""
    if not busy or not kept:
        return "none: the job did not keep up"
    if max(busy) >= KEEP_UP_SHARE:
        return "not shown: the batches ran back to back"
    return f"{1 / max(busy):.2f}x (estimate: 1 / the busiest stage's busy share)"


def goal_ratio(processed: Mapping[str, float], goal: float) -> float:
    """The slowest stage's processed rate over the ``goal`` rate (NaN without stages)."""
    return min(processed.values()) / goal if processed and goal else math.nan


def goal_verdict(kept: bool, offered: float, goal: float, factor: float) -> str:
    """The goal's ``processed / offered >= factor`` at the goal rate, as measured by offering
    ``factor`` times it: met when the job kept up with at least 99 % of that (the simulators'
    pacing), not met when it did not keep up."""
    asked = factor * goal
    if offered < 0.99 * asked:
        return f"not measured: {offered:,.0f}/s offered, {asked:,.0f}/s asked"
    return (f"met: kept up with {offered / goal:.2f}x the goal rate" if kept
            else f"not met: did not keep up with {offered / goal:.2f}x the goal rate")  # fmt: skip


# --- the gap of an operation ------------------------------------------------------------


def longest_pause(times: Iterable[float], start: float, end: float) -> float:
    """The longest interval between consecutive points of ``start``, the ``times`` between
    ``start`` and ``end``, and ``end``: how long a stage committed nothing at most."""
    points = [start, *(t for t in sorted(times) if start < t < end), end]
    return max(b - a for a, b in pairwise(points))


@dataclass(frozen=True)
class Gap:
    """An operation's gap over ``[t0, t1]`` (its start and end; equal for a kill).

    Per stage: the longest time it committed nothing across the operation, from its last
    commit at or before ``t0`` (``t0`` if none) to its first after ``t1``, every interval
    between consecutive commits included. The gap is the longest of them (any stage); beside
    it, ``first``: that figure for the stage that committed first after ``t1``."""

    per_stage: Mapping[str, float]
    first_stage: str

    @classmethod
    def across(cls, times: Mapping[str, Sequence[float]], t0: float, t1: float) -> Gap:
        """From each stage's commit times; ``ValueError`` naming a stage with none after
        ``t1``."""
        if not times:
            raise ValueError("no stage to measure a gap of")
        pauses, resumed = {}, {}
        for stage, ts in times.items():
            after = sorted(t for t in ts if t > t1)
            if not after:
                raise ValueError(f"stage {stage} committed no batch after {t1:.1f}")
            before = [t for t in ts if t <= t0]
            pauses[stage] = longest_pause(ts, max(before) if before else t0, after[0])
            resumed[stage] = after[0]
        return cls(pauses, min(resumed, key=lambda s: resumed[s]))

    @property
    def longest(self) -> float:
        return max(self.per_stage.values())

    @property
    def first(self) -> float:
        return self.per_stage[self.first_stage]

    def describe(self) -> str:
        stages = ", ".join(f"{s} {g:.1f} s" for s, g in sorted(self.per_stage.items()))
        worst = max(self.per_stage, key=lambda s: self.per_stage[s])
        return (f"gap {self.longest:5.1f} s (longest pause of any stage: {worst}; first stage "
                f"back, {self.first_stage}: {self.first:.1f} s; per stage: {stages})")  # fmt: skip


# --- latency --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Latencies:
    """Every event's latency (s); the ``late`` ones (not written when the measurement ended)
    at the time they had waited by then: a lower bound, so they raise a percentile, never
    lower it."""

    values: list[float]
    late: int

    @classmethod
    def of(cls, due_written: Iterable[tuple[float, float | None]], end: float) -> Latencies:
        """From ``(due, written)`` per event: when it was due (its event time, its window's
        end) and the stamp of the write that made it visible (None: not seen). An event
        written after ``end`` or not at all is late, at ``end - due``."""
        values, late = [], 0
        for due, written in due_written:
            if written is None or written > end:
                late += 1
                values.append(end - due)
            else:
                values.append(written - due)
        return cls(values, late)

    def pct(self, q: float) -> float:
        """The ``q`` quantile (nearest rank), NaN without events."""
        if not self.values:
            return math.nan
        ordered = sorted(self.values)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]

    def describe(self, what: str = "events") -> str:
        if not self.values:
            return f"no {what}"
        return (
            f"p50 {self.pct(0.5):.2f} s  p90 {self.pct(0.9):.2f} s  p99 {self.pct(0.99):.2f} s"
            f"  max {max(self.values):.2f} s  ({len(self.values):,} {what}, {self.late:,} late: "
            "not written when the measurement ended, counted at their wait then)"
        )


Version = tuple[float, int, float]
"""One state of a keyed row seen in the store: ``(event time, sequence, stamp of its write)``."""


def covering_writes(
    events: Iterable[tuple[str, float, int]], versions: Mapping[str, Sequence[Version]]
) -> Iterable[tuple[float, float | None]]:
    """Per event ``(key, event time, sequence)``: ``(event time, stamp)`` of the first version
    of its key's row (in ``versions``, in the order written: a row only moves forward by
    ``(time, sequence)``) that holds it or a newer event, None if no version does. The store
    keeps the newest event per key: an event is in the store once its row reached it."""
    for key, at, seq in events:
        rows = versions.get(key, ())
        i = bisect.bisect_left(rows, (at, seq), key=lambda v: (v[0], v[1]))
        yield at, (rows[i][2] if i < len(rows) else None)


def window_counts(
    events: Iterable[tuple[str, int]], size_ms: int, slide_ms: int, lo_ms: int, hi_ms: int
) -> dict[tuple[str, int], int]:
    """Per ``(symbol, window end)``, ends between ``lo_ms`` and ``hi_ms``: how many of the
    ``(symbol, event time ms)`` events fall in the window ``[end - size_ms, end)``; windows
    start at multiples of ``slide_ms`` (tumbling when equal to ``size_ms``), as the trade
    analyser's series (and :func:`support.oracle.trade_windows`) have them. Only windows with
    at least one event."""
    buckets: dict[str, dict[int, int]] = defaultdict(lambda: defaultdict(int))
    for symbol, at in events:
        if lo_ms - size_ms <= at < hi_ms:
            buckets[symbol][at // slide_ms] += 1
    per = size_ms // slide_ms
    out = {}
    for symbol, counts in buckets.items():
        first_end = -(-lo_ms // slide_ms)  # the first end (in slides) at or after lo_ms
        for end in range(first_end, hi_ms // slide_ms + 1):
            n = sum(counts.get(b, 0) for b in range(end - per, end))
            if n:
                out[(symbol, end * slide_ms)] = n
    return out
