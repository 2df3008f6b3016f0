"""The ``sources`` health checks: every source of each running job, head against committed.

Per source, worst first:

- **reset** (fail): the upstream serves another stream than the committed offset's, its head
  is below the committed sequence, or it no longer holds the records after it; the message
  names the source and both positions. Reading on would skip records, so this is never a
  warning;
- **degraded** (warn, fail after ``max_source_degraded`` seconds): the job's own reader
  reports that the upstream does not answer (``status.json`` → ``sources_state``);
- **losses and late files** the readers counted (warn for ``recent_loss_window`` seconds,
  then reported as ok with the count, so they are never out of sight);
- **backlog**: beta's ``/head`` against the committed sequence, alpha's newest file against
  the committed file.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import requests

from streamops.exceptions import StreamopsError
from streamops.health_report import CheckResult, Level, Observation
from streamops.job_view import JobView
from streamops.jobs import current_spec
from streamops.settings import Settings


def committed_positions(view: JobView) -> dict[str, dict[str, Any]]:
    """Per source id, the committed end offset of the stage that is furthest behind."""
    out: dict[str, dict[str, Any]] = {}
    for info in view.stages.values():
        for key, end in stage_offsets(info).items():
            before = out.get(key)
            if before is None or _position(end) < _position(before):
                out[key] = end
    return out


def stage_offsets(info: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Per source id, the committed end offset of one stage (``status.json`` → ``stages``);
    Spark writes an offset as JSON text, a source without a ``source`` id is skipped."""
    out: dict[str, dict[str, Any]] = {}
    for src in info.get("sources") or []:
        end = src.get("end_offset")
        if isinstance(end, str):
            try:
                end = json.loads(end)
            except json.JSONDecodeError:
                continue
        if isinstance(end, dict) and end.get("source"):
            out[str(end["source"])] = end
    return out


def source_location(source: str, offset: dict[str, Any], args: dict[str, Any]) -> tuple[str, str]:
    """``("beta", url)``, ``("alpha", directory)`` or ``("", "")``: where ``source`` is read
    from, by its id (``beta:<url>``, ``alpha:<dir>``) or else by the job's args."""
    kind, _, where = source.partition(":")
    if "sequence" in offset:
        return "beta", where if kind == "beta" else str(args.get("beta_url") or "")
    if "file" in offset:
        return "alpha", where if kind == "alpha" else str(args.get("alpha_dir") or "")
    return "", ""


def beta_head(url: str, timeout: float) -> dict[str, Any]:
    """fleetsim-beta's ``/head`` (``first``, ``last``, ``stream``) for its ``/pings`` URL;
    raises :class:`requests.RequestException` or :class:`ValueError` when it cannot tell."""
    response = requests.get(url.rstrip("/").removesuffix("/pings") + "/head", timeout=timeout)
    response.raise_for_status()
    head = response.json()
    if not isinstance(head, dict):
        raise ValueError(f"/head answered {head!r}")
    return head


def alpha_unread(directory: Path, committed: str) -> int:
    """CSV files of an alpha drop directory after the committed file (not read yet)."""
    return sum(1 for p in directory.glob("*.csv") if p.name > committed)


def _position(offset: dict[str, Any]) -> tuple[int, str]:
    return (int(offset.get("sequence") or 0), str(offset.get("file") or ""))


def spec_args(settings: Settings, job: str) -> dict[str, Any] | None:
    """The resolved args of the job's last submitted spec; ``None`` if none is recorded."""
    try:
        spec = current_spec(settings, job)
    except StreamopsError:
        return None
    return dict(spec.resolved_args(state_root=str(settings.state_root)))


def check_sources(obs: Observation) -> list[CheckResult]:
    """Every source of each running job. A source is located by its offset's source id
    (``beta:<url>``, ``alpha:<dir>``) or else by the job's args ``beta_url`` / ``alpha_dir``."""
    out = []
    for view in obs.live_views:
        args = spec_args(obs.settings, view.name) or {}
        states = view.status.get("sources_state") or {}
        for source, offset in sorted(committed_positions(view).items()):
            state = states.get(source) or {}
            kind, where = source_location(source, offset, args)
            if kind == "beta":
                probe = _beta_source(obs, view.name, source, where, offset)
            elif kind == "alpha":
                probe = _alpha_backlog(obs, view.name, source, where, offset)
            else:
                continue
            out.append(_worst(probe, *_reported(obs, view.name, source, state)))
    return out or [CheckResult("sources", "sources", Level.OK, "no running job source to check")]


_ORDER = {Level.OK: 0, Level.WARN: 1, Level.FAIL: 2}


def _worst(*results: CheckResult) -> CheckResult:
    """One result per source: the worst level, its messages joined (worst first)."""
    ranked = sorted(results, key=lambda r: -_ORDER[r.level])
    return CheckResult(
        ranked[0].group, ranked[0].name, ranked[0].level, "; ".join(r.message for r in ranked)
    )


def _reported(
    obs: Observation, job: str, source: str, state: dict[str, Any]
) -> list[CheckResult]:
    """What the job's readers reported of ``source``: degraded, losses, late files."""
    name, t, out = f"{job}/{source}", obs.thresholds, []
    if state.get("state") == "degraded":
        since = float(state.get("since") or obs.now)
        age = max(0.0, obs.now - since)
        level = Level.FAIL if age > t.max_source_degraded else Level.WARN
        at, limit = time.strftime("%H:%M:%S", time.gmtime(since)), t.max_source_degraded
        out.append(CheckResult("sources", name, level,
                               f"job {job}: source {source} degraded since {at} UTC ({age:.0f} s, "
                               f"limit {limit:.0f} s): {state.get('reason')}"))  # fmt: skip
    for kind, what in (("losses", "accepted loss"), ("late_files", "late file")):
        events = state.get(kind) or []
        if not events:
            continue
        newest = max(float(e.get("at") or 0) for e in events)
        recent = obs.now - newest < t.recent_loss_window
        last = events[-1]
        detail = ", ".join(f"{k}={v}" for k, v in last.items() if k != "at")
        out.append(CheckResult("sources", name, Level.WARN if recent else Level.OK,
                               f"job {job}: source {source} has {len(events)} {what}(s), the "
                               f"last at {time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime(newest))}"
                               f" UTC ({detail})"))  # fmt: skip
    return out


def _backlog_result(
    job: str, source: str, count: int, unit: str, warn: int, fail: int
) -> CheckResult:
    name, text = f"{job}/{source}", f"job {job}: {source} backlog {count} {unit}"
    if count > fail:
        return CheckResult("sources", name, Level.FAIL, f"{text} (limit {fail})")
    if count > warn:
        return CheckResult("sources", name, Level.WARN, f"{text} (warn above {warn})")
    return CheckResult("sources", name, Level.OK, text)


def _beta_source(
    obs: Observation, job: str, source: str, url: str, offset: dict[str, Any]
) -> CheckResult:
    name = f"{job}/{source}"
    if not url:
        message = f"job {job}: cannot locate source {source} (no beta_url arg)"
        return CheckResult("sources", name, Level.WARN, message)
    head_url = url.rstrip("/").removesuffix("/pings") + "/head"
    try:
        head = beta_head(url, obs.http_timeout)
        last, first = int(head.get("last") or 0), head.get("first")
    except (requests.RequestException, ValueError, AttributeError) as exc:
        message = f"job {job}: source {source} at {head_url} does not answer: {type(exc).__name__}"
        return CheckResult("sources", name, Level.WARN, message)
    committed, stream = int(offset.get("sequence") or 0), offset.get("stream")
    served = head.get("stream")
    where = f"committed sequence {committed} of stream {stream or '?'}"
    reset = None
    if stream and served and served != stream:
        reset = f"the server now serves stream {served} (sequences {first}..{last})"
    elif last < committed:
        reset = f"the server's head is {last}, below it"
    elif first is not None and int(first) - 1 > committed:
        reset = f"the server no longer holds sequences {committed + 1}..{int(first) - 1}"
    if reset:
        return CheckResult("sources", name, Level.FAIL,
                           f"job {job}: source {source} was reset or lost records: {where}, "
                           f"but {reset}")  # fmt: skip
    t = obs.thresholds
    return _backlog_result(
        job, source, last - committed, "records", t.backlog_warn_records, t.backlog_fail_records
    )


def _alpha_backlog(
    obs: Observation, job: str, source: str, path: str, offset: dict[str, Any]
) -> CheckResult:
    directory, committed = Path(path), str(offset.get("file") or "")
    if not path or not directory.is_dir():
        message = f"job {job}: directory {path or '?'} of source {source} does not exist"
        return CheckResult("sources", f"{job}/{source}", Level.FAIL, message)
    unread = alpha_unread(directory, committed)
    t = obs.thresholds
    return _backlog_result(job, source, unread, "files", t.backlog_warn_files, t.backlog_fail_files)
