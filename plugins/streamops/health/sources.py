"""The ``sources`` health checks: every source of each running job, head against committed.

A pure function of the gathered :class:`~streamops.health.report.HealthInputs`: the sources'
upstreams were probed while gathering (:mod:`streamops.world.source_probes`, the code that knows
how each kind of source is asked), and what the job's own readers report is in its status.
Per source, worst first:

- **broken** (fail): the upstream was reset, replaced or truncated (its head is below the
  committed position, or it no longer holds the records after it), or its directory is gone;
  the message names the source and both positions. Reading on would skip records, so this
  is never a warning;
- **degraded** (warn, fail after ``max_source_degraded`` seconds): the job's own reader
  reports that the upstream does not answer, or answers nothing usable, with its count of
  failed tries (``status.json`` → ``sources_state``);
- **losses, late, changed and ignored files** the readers counted (warn for
  ``recent_loss_window`` seconds, then reported as ok with the count, so they are never out
  of sight);
- **backlog** in the probe's unit (records, files, entries: each has its thresholds) against
  the thresholds; an upstream that could not tell is a warning.

A probe that raised, or a source whose judging raises (odd data in a reader's report), fails
that source alone, naming the exception and where it came from; the other sources are judged.
"""

from __future__ import annotations

import time
from typing import Any

from streamops.exceptions import ConfigError
from streamops.health.crash import isolated
from streamops.health.report import CheckResult, HealthInputs, Level, Thresholds
from streamops.world.source_probes import SourceProbe


def check_sources(obs: HealthInputs) -> list[CheckResult]:
    """Every probed source of each running job, with what its readers reported."""
    out = []
    for view in obs.live_views:
        for source, probe in sorted(obs.sources.get(view.name, {}).items()):
            out += isolated("sources", f"{view.name}/{source}",
                            lambda v=view, s=source, p=probe: [_source(obs, v.name, s, p)],
                            f"job {view.name}: the check of source {source}")  # fmt: skip
    return out or [CheckResult("sources", "sources", Level.OK, "no running job source to check")]


def _source(obs: HealthInputs, job: str, source: str, probe: SourceProbe) -> CheckResult:
    state = obs.views[job].status.sources_state.get(source) or {}
    return _worst(_probed(obs.thresholds, job, probe), *_reported(obs, job, source, state))


def _probed(t: Thresholds, job: str, probe: SourceProbe) -> CheckResult:
    name = f"{job}/{probe.source}"
    if probe.error:
        return CheckResult("sources", name, Level.FAIL,
                           f"job {job}: the probe of source {probe.source} failed: "
                           f"{probe.error}")  # fmt: skip
    if probe.broken:
        return CheckResult("sources", name, Level.FAIL, f"job {job}: {probe.broken}")
    if probe.unknown or probe.backlog is None:
        return CheckResult("sources", name, Level.WARN,
                           f"job {job}: {probe.unknown or 'backlog unknown'}")  # fmt: skip
    limits = t.backlog_limits
    if probe.unit not in limits:
        raise ConfigError(f"no backlog thresholds for unit {probe.unit!r} of a {probe.kind} "
                          f"source; known units: {', '.join(limits)}")  # fmt: skip
    warn, fail = limits[probe.unit]
    return _backlog_result(job, probe.source, probe.backlog, probe.unit, warn, fail)


_ORDER = {Level.OK: 0, Level.WARN: 1, Level.FAIL: 2}


def _worst(*results: CheckResult) -> CheckResult:
    """One result per source: the worst level, its messages joined (worst first)."""
    ranked = sorted(results, key=lambda r: -_ORDER[r.level])
    return CheckResult(
        ranked[0].group, ranked[0].name, ranked[0].level, "; ".join(r.message for r in ranked)
    )


def _reported(
    obs: HealthInputs, job: str, source: str, state: dict[str, Any]
) -> list[CheckResult]:
    """What the job's readers reported of ``source``: degraded, losses, late files."""
    name, t, out = f"{job}/{source}", obs.thresholds, []
    if state.get("state") == "degraded":
        since = float(state.get("since") or obs.now)
        age = max(0.0, obs.now - since)
        level = Level.FAIL if age > t.max_source_degraded else Level.WARN
        at, limit = time.strftime("%H:%M:%S", time.gmtime(since)), t.max_source_degraded
        tries = f"; {state['failures']} failed tries" if state.get("failures") else ""
        out.append(CheckResult("sources", name, level,
                               f"job {job}: source {source} degraded since {at} UTC ({age:.0f} s, "
                               f"limit {limit:.0f} s): {state.get('reason')}{tries}"))  # fmt: skip
    for kind, what in (("losses", "accepted loss"), ("late_files", "late file"),
                       ("changed_files", "changed file"),
                       ("ignored_files", "ignored file")):  # fmt: skip
        events = state.get(kind) or []
        if not events:
            continue
        newest = max(float(e.get("at") or 0) for e in events)
        recent = obs.now - newest < t.recent_loss_window
        last = events[-1]
        detail = ", ".join(f"{k}={v}" for k, v in last.items() if k != "at")
        if kind == "losses":
            detail += f"; {_skipped(events)}"
        out.append(CheckResult("sources", name, Level.WARN if recent else Level.OK,
                               f"job {job}: source {source} has {len(events)} {what}(s), the "
                               f"last at {time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime(newest))}"
                               f" UTC ({detail})"))  # fmt: skip
    return out


def _skipped(losses: list[dict[str, Any]]) -> str:
    """How many records the accepted losses skipped in all, where that is knowable."""
    known = [int(e["lost_records"]) for e in losses if e.get("lost_records") is not None]
    unknown = len(losses) - len(known)
    text = f"{sum(known)} records skipped in all"
    if unknown:
        text += f", plus an unknown number in {unknown} reset(s) to another stream"
    return text


def _backlog_result(
    job: str, source: str, count: int, unit: str, warn: int, fail: int
) -> CheckResult:
    name, text = f"{job}/{source}", f"job {job}: {source} backlog {count} {unit}"
    if count > fail:
        return CheckResult("sources", name, Level.FAIL, f"{text} (limit {fail})")
    if count > warn:
        return CheckResult("sources", name, Level.WARN, f"{text} (warn above {warn})")
    return CheckResult("sources", name, Level.OK, text)
