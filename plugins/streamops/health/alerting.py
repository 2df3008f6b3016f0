"""The health checks as alerts: each failed check a :class:`~streamops.alerts.Firing` with its
job, and what a run judged (:func:`scope`), so a check that fails no more is resolved."""

from __future__ import annotations

from collections.abc import Collection

from streamops.alerts import TASK_GROUP, Firing, Scope
from streamops.health.report import CheckResult, Level

PARAMS_GROUP = "params"  # a run whose params were refused


def firing(results: Collection[CheckResult]) -> list[Firing]:
    """The failed checks of a health report, each with its job (none: cluster-wide)."""
    return [Firing(r.name, r.message, _job_of(r), r.group, r.level.value)
            for r in results if r.level is Level.FAIL]  # fmt: skip


def scope(groups: Collection[str], jobs: Collection[str] = ()) -> Scope:
    """What a health run judged: the groups whose checks ran (and the run's own params and
    task), the jobs asked for (none: every job)."""
    return Scope(frozenset({*groups, TASK_GROUP, PARAMS_GROUP}), frozenset(jobs) or None)


def _job_of(result: CheckResult) -> str:
    if result.group in ("cluster", PARAMS_GROUP) or result.name == result.group:
        return ""
    if result.name.startswith("procedure/"):  # procedure/<kind>[/<job>]
        return result.name.split("/")[2] if result.name.count("/") >= 2 else ""
    return result.name.split("/")[0]
