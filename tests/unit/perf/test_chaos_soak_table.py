"""The chaos soak's table (``tests/perf/chaos_soak.py``) counts what the oracle found."""

from __future__ import annotations

from chaos_soak import oracle_counts, table
from support.chaos.campaign import StepReport
from support.oracle import Comparison


def comparison() -> Comparison:
    cmp = Comparison("vehicles", expected=3, actual=3)
    cmp.missing = ["V1"]
    cmp.unexpected = ["V9", "V8"]
    cmp.different = [("V2", 1.0, 2.0), ("V3", 1.0, 2.0), ("V4", 1.0, 2.0)]
    return cmp


def test_counts_are_read_from_the_summary_line_before_its_samples() -> None:
    """The summary's sample rows follow on the next lines: "different" was read as 0 then."""
    summary = comparison().summary()
    assert "\n  first different" in summary
    assert oracle_counts(summary) == (1, 2, 3)
    assert oracle_counts("an accepted loss of 77 records") == (0, 0, 0)


def test_the_table_says_extra_for_unexpected_keys() -> None:
    report = StepReport(1, "node", "fault", oracle=[comparison().summary()], oracle_ok=False)
    text = table([report, StepReport(2, "node", "fault", oracle_ok=True)])
    assert "lost / extra / diff" in text and "dup" not in text
    assert "| node | 2 | 1 |" in text and "| 1 / 2 / 3 |" in text
