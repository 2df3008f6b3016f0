"""A check that raises is a failed check (:func:`crashed`), and one check's exception never
takes the others with it (:func:`isolated`).

Health must never crash, whatever runs: an exception in one check (or in what was gathered
for it) becomes that check's ``fail``, naming the exception and the file and line it came from
(:func:`streamops.tracebacks.describe`), and every other check still reports.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from streamops.health.report import CheckResult, Level
from streamops.tracebacks import describe

log = logging.getLogger("streamops.health")


def crashed(group: str, name: str, exc: Exception, what: str | None = None) -> CheckResult:
    """The ``fail`` of check ``name`` (``what``: how the message names it) that raised
    ``exc``; the traceback goes to the log."""
    log.error("health check %s of group %s raised", name, group, exc_info=exc)
    return CheckResult(group, name, Level.FAIL,
                       f"{what or f'the {name} check'} failed: {describe(exc)}")  # fmt: skip


def isolated(
    group: str, name: str, judge: Callable[[], list[CheckResult]], what: str | None = None
) -> list[CheckResult]:
    """The results of ``judge()``, or its one ``fail`` when it raises: one check's exception
    never takes the others with it."""
    try:
        return judge()
    except Exception as exc:  # a check's own bug or odd data: reported, never a crash
        return [crashed(group, name, exc, what)]
