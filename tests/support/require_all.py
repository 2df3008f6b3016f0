"""``STREAMOPS_REQUIRE_ALL=1``: a test that would be skipped fails instead, with the reason.

A pytest plugin (tests/conftest.py lists it). CI (``.ci/run``) sets the variable, so a machine
that lacks something a test needs (a PostgreSQL server, Chromium, root and ``ip`` for network
namespaces) turns the run red instead of green with fewer tests. Every way to skip is caught:
a ``skipif`` mark and ``pytest.skip`` in a fixture (the setup's report), ``pytest.skip`` in the
test (the call's), and a module skipped while it is collected (``allow_module_level``,
``importorskip``: the collection's report, which fails the module). An expected failure
(``xfail``) is not a skip and stays as it is; tests deselected by ``-m`` are not skipped either.
"""

from __future__ import annotations

import os
from collections.abc import Generator

import pytest

REQUIRE_ALL = "STREAMOPS_REQUIRE_ALL"


def required() -> bool:
    """Whether a skip must fail (``STREAMOPS_REQUIRE_ALL=1``)."""
    return os.environ.get(REQUIRE_ALL) == "1"


def fail_a_skip(report: pytest.TestReport | pytest.CollectReport) -> None:
    """Turn a skipped ``report`` into a failed one naming the reason, when required."""
    if not report.skipped or hasattr(report, "wasxfail") or not required():
        return
    if isinstance(report.longrepr, tuple):  # (path, line, "Skipped: reason")
        path, line, reason = report.longrepr
        said = f"{reason} ({path}:{line})"
    else:
        said = str(report.longrepr)
    report.outcome = "failed"
    report.longrepr = f"{REQUIRE_ALL}=1 and this would be skipped: {said}"


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield  # after the skipping plugin has told an xfail from a skip
    fail_a_skip(report)
    return report


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_make_collect_report(
    collector: pytest.Collector,
) -> Generator[None, pytest.CollectReport, pytest.CollectReport]:
    report = yield
    fail_a_skip(report)
    return report
