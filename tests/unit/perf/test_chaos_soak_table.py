"""The chaos soak's table (``tests/perf/chaos_soak.py``): a column each for keys lost, keys
the sink should not hold (extra), windows that counted a record twice (dup) and other rows
that differ, from each step's counts (``support.chaos.judge.tally``), not from the
summary's text."""

from __future__ import annotations

from chaos_soak import table
from support.chaos.campaign import StepReport
from support.chaos.judge import tally
from support.oracle import Comparison, WindowStats


def windows() -> Comparison:
    cmp = Comparison("vehicle_stats", expected=4, actual=4)
    cmp.missing = [("V1", 0.0)]
    cmp.unexpected = [("V9", 0.0), ("V8", 60.0)]
    stats = WindowStats(3, 10.0, 12.0)
    cmp.different = [
        (("V2", 0.0), stats, {"pings": 4, "avg_speed": 10.0, "max_speed": 12.0}),  # twice
        (("V3", 0.0), stats, {"pings": 3, "avg_speed": 11.0, "max_speed": 12.0}),
        (("V4", 0.0), stats, {"pings": 2, "avg_speed": 10.0, "max_speed": 12.0}),
    ]
    return cmp


def test_the_table_has_a_column_each_for_lost_extra_dup_and_different() -> None:
    """"dup" counted unexpected keys, and a record counted twice showed only as "diff"."""
    found = tally([windows()])
    assert (found.missing, found.unexpected, found.duplicated, found.different) == (1, 2, 1, 2)
    failed = StepReport(1, "node", "fault", oracle=[windows().summary()], oracle_ok=False,
                        recovery_s=9.0, bound_s=20, health_ok_s=3.0, tally=found)  # fmt: skip
    passed = StepReport(2, "node", "fault", oracle_ok=True, recovery_s=11.0, bound_s=20,
                        health_ok_s=5.0)  # fmt: skip
    text = table([failed, passed])
    assert "lost / extra / dup / diff" in text
    assert "| node | 2 | 1 | 10.0 / 11.0 s (20 s) |" in text
    assert "| 5.0 s | 1 / 2 / 1 / 2 |" in text


def test_a_step_that_did_not_run_is_a_failed_row_not_left_out() -> None:
    """A step whose precondition failed was left out of the table ("skipped")."""
    text = table([StepReport(1, "store-down", "fault", error="its precondition does not "
                             "hold (tried store-down): not run")])  # fmt: skip
    assert "| store-down | 1 | 1 | - |" in text
