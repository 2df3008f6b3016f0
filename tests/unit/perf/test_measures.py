"""What the benchmarks' figures mean (``tests/perf/measures.py``): kept up, the gap of an
operation, latency with late events counted."""

from __future__ import annotations

import math
import random

import pytest
from measures import (
    Backlog,
    Gap,
    Latencies,
    backlog,
    covering_writes,
    goal_ratio,
    goal_verdict,
    head_at,
    headroom_estimate,
    keeping_up,
    kept_up,
    window_counts,
)
from support.oracle import trade_windows

from streamops.sim.market import Trade

# --- kept up --------------------------------------------------------------------------------


Samples = list[tuple[float, float]]


def steady(
    rate: float, batch_s: float, trigger_s: float, span: float, lag_growth: float = 0.0
) -> tuple[Samples, Samples]:
    """Head samples of a source offering ``rate``/s, and the commits of a stage whose batches
    take ``batch_s`` every ``trigger_s``: at a commit it read up to its batch's start, less
    ``lag_growth`` records more at each commit (a stage falling behind)."""
    heads = [(t / 4, rate * t / 4) for t in range(int(span * 4) + 1)]
    commits: Samples = []
    k, t = 0, trigger_s
    while t + batch_s <= span:
        commits.append((t + batch_s, rate * t - k * lag_growth))
        k, t = k + 1, t + trigger_s
    return heads, commits


def test_head_at_interpolates_and_holds_at_the_ends() -> None:
    heads = [(10.0, 100.0), (11.0, 200.0), (12.0, 200.0)]
    assert head_at(heads, 10.25) == 125.0
    assert head_at(heads, 11.5) == 200.0
    assert head_at(heads, 5.0) == 100.0 and head_at(heads, 20.0) == 200.0


def test_a_steady_stage_keeps_its_backlog() -> None:
    heads, commits = steady(rate=1000, batch_s=0.6, trigger_s=1.0, span=60)
    b = backlog("vehicles", "beta", heads, commits, rate=1000, longest_batch_s=0.6)
    assert b is not None and b.first == pytest.approx(600) and b.last == pytest.approx(600)
    assert not b.grew
    assert kept_up({"vehicles": 1000.0}, 1000.0, [b])


def test_a_backlog_that_grows_is_not_kept_up_even_at_95_percent() -> None:
    """The defect: 96 % of the offered rate processed, the backlog growing by 40 records a
    batch (2,360 over the window, more than a batch's worth): not kept up."""
    heads, commits = steady(rate=1000, batch_s=0.6, trigger_s=1.0, span=60, lag_growth=40)
    b = backlog("avg-1s", "trades", heads, commits, rate=1000, longest_batch_s=0.6)
    assert b is not None and b.growth == pytest.approx(40 * (len(commits) - 1))
    assert b.grew
    ok, why = keeping_up({"avg-1s": 960.0}, 1000.0, [b])
    assert not ok and "the backlog grew" in why and "avg-1s" in why


def test_a_backlog_swinging_within_a_batch_s_worth_is_kept_up() -> None:
    b = Backlog("vehicles", "beta", first=600.0, last=1500.0, allowance=1000.0)
    assert not b.grew and kept_up({"vehicles": 990.0}, 1000.0, [b])
    assert Backlog("vehicles", "beta", 600.0, 1601.0, 1000.0).grew


@pytest.mark.parametrize(
    ("processed", "backlogs", "why"),
    [
        ({}, [], "no stage committed"),
        ({"a": 1000.0, "b": 940.0}, [Backlog("a", "s", 0, 0, 1)], "b processed 94%"),
        ({"a": 1000.0}, [], "fewer than two batches"),
        ({"a": 1000.0}, [None], "fewer than two batches"),
    ],
)
def test_not_kept_up(processed: dict[str, float], backlogs: list[Backlog | None], why: str) -> None:
    ok, reason = keeping_up(processed, 1000.0, backlogs)
    assert not ok and why in reason


def test_the_busy_share_is_an_estimate_and_only_while_kept_up() -> None:
    assert headroom_estimate([0.5, 0.25], kept=True).startswith("2.00x (estimate")
    assert headroom_estimate([0.97], kept=True).startswith("not shown")
    assert headroom_estimate([0.5], kept=False).startswith("none")


def test_the_goal_ratio_is_measured_at_the_factor() -> None:
    assert goal_ratio({"a": 26_000.0, "b": 25_000.0}, 20_000) == 1.25
    assert math.isnan(goal_ratio({}, 20_000))
    assert goal_verdict(True, 26_050, 20_000, 1.3).startswith("met: kept up with 1.30x")
    assert goal_verdict(False, 26_050, 20_000, 1.3).startswith("not met")
    assert goal_verdict(True, 20_000, 20_000, 1.3).startswith("not measured")


# --- the gap ------------------------------------------------------------------------------


def test_the_gap_is_the_longest_pause_of_any_stage_with_the_first_back_beside() -> None:
    """The operation over [2.5, 3]: ``a`` last committed at 2 and again at 10 (8 s), ``b``
    at 2 and 5 (3 s, the first back). The gap is 8 s, not the first stage's 3 s."""
    gap = Gap.across({"a": [0, 1, 2, 10, 11], "b": [0, 1, 2, 5, 11]}, 2.5, 3.0)
    assert gap.per_stage == {"a": 8.0, "b": 3.0}
    assert (gap.longest, gap.first_stage, gap.first) == (8.0, "b", 3.0)
    assert "gap   8.0 s" in gap.describe() and "first stage back, b: 3.0 s" in gap.describe()


def test_a_pause_between_commits_during_the_operation_counts() -> None:
    gap = Gap.across({"a": [2, 3, 9, 12]}, 2.5, 4.0)  # 3 → 9 while the operation ran
    assert gap.longest == 6.0


def test_a_kill_is_an_operation_of_no_length_and_a_new_stage_counts_from_it() -> None:
    gap = Gap.across({"old": [1, 2, 7], "new": [9]}, 2.5, 2.5)
    assert gap.per_stage == {"old": 5.0, "new": 6.5}
    assert gap.first_stage == "old"


def test_a_stage_that_never_came_back_is_named() -> None:
    with pytest.raises(ValueError, match="stage b committed no batch after"):
        Gap.across({"a": [1, 5], "b": [1]}, 2, 3)


# --- latency --------------------------------------------------------------------------------


def test_late_events_are_counted_at_their_wait_never_dropped() -> None:
    """Three events written 0.5 s after they were due, one not written and one written after
    the measurement ended: both late, at the 10 s they had waited when it ended."""
    lat = Latencies.of([(0, 0.5), (1, 1.5), (2, 2.5), (0, None), (0, 11.0)], end=10.0)
    assert lat.late == 2
    assert sorted(lat.values) == [0.5, 0.5, 0.5, 10.0, 10.0]
    assert lat.pct(0.99) == 10.0  # leaving them out would say 0.5 s
    assert "2 late" in lat.describe("windows")
    assert Latencies.of([], 1.0).describe() == "no events"


def test_every_event_is_sampled_not_only_the_newest_of_its_row() -> None:
    """A row (one VIN) written at 2.0 holding the event of time 1.0, then at 4.5 holding the
    one of 3.0, which superseded 2.0 in its batch: the event of 2.0 reached the store at
    4.5 (2.5 s), the newest ones alone would say 1.0 and 1.5 s; 5.0 is not written yet."""
    versions = {"V1": [(1.0, 1, 2.0), (3.0, 3, 4.5)]}
    events = [("V1", 1.0, 1), ("V1", 2.0, 2), ("V1", 3.0, 3), ("V1", 5.0, 5), ("V2", 1.0, 1)]
    got = list(covering_writes(events, versions))
    assert got == [(1.0, 2.0), (2.0, 4.5), (3.0, 4.5), (5.0, None), (1.0, None)]
    lat = Latencies.of(got, end=6.0)
    assert sorted(lat.values) == [1.0, 1.0, 1.5, 2.5, 5.0] and lat.late == 2


def test_an_event_at_the_same_time_is_held_by_the_higher_sequence() -> None:
    versions = {"V1": [(1.0, 4, 2.0), (1.0, 6, 3.0)]}
    assert list(covering_writes([("V1", 1.0, 5)], versions)) == [(1.0, 3.0)]


@pytest.mark.parametrize(("size_ms", "slide_ms"), [(1000, 200), (1000, 1000), (60_000, 1000)])
def test_window_counts_equal_the_oracle(size_ms: int, slide_ms: int) -> None:
    rng = random.Random(size_ms + slide_ms)
    t, trades = 1_700_000_000.0, []
    for seq in range(1, 4000):
        t += rng.uniform(0, 0.05)
        trades.append(Trade(seq, rng.choice("ABC"), round(t, 3), 10.0, 1))
    lo, hi = 1_700_000_060_000, 1_700_000_150_000
    got = window_counts(((tr.symbol, tr.time_ms) for tr in trades), size_ms, slide_ms, lo, hi)
    oracle = trade_windows([trades], series="s", size_ms=size_ms, slide_ms=slide_ms).windows
    expected = {(sym, end): v.trades for (_, sym, end), v in oracle.items() if lo <= end <= hi}
    assert got == expected and got
