"""Alerts: every failed check reaches a person, and so does its recovery.

A notifier (the ``health_check`` and ``reconcile`` DAGs') hands :func:`deliver` what fails now,
one :class:`Firing` per failed check, and what it judged (a :class:`Scope`).
``<state>/alerts/<alertname>.json`` remembers what fired and since when, so a check it judged
that no longer fails is sent once more, resolved (``endsAt``), and a check keeps its
``startsAt`` while it fails.

Each configured :class:`Webhook` gets an HTTP POST, in one of two formats:

- ``alertmanager`` (default): the body Alertmanager's ``POST /api/v2/alerts`` takes, a JSON
  list of ``{labels: {alertname, job, check, group, severity, level}, annotations: {summary,
  message}, startsAt, endsAt, generatorURL}``. Every firing alert is sent again at each run,
  its ``endsAt`` ``ttl_s`` ahead (as Prometheus does: Alertmanager resolves an alert that is no
  longer sent once that time has passed), each resolved one once with ``endsAt`` = when;
- ``text``: ``{"text": "..."}`` as Slack, Mattermost, Rocket.Chat or a Google Chat webhook
  take it, one line per alert, sent only when something changed (a new failure, a recovery).

A receiver that does not answer costs a run ``timeout_s`` per webhook at most: the POST is
given up with a warning in the log, never an exception, and what it did not deliver as
resolved is sent again at the next run.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from streamops.exceptions import ConfigError
from streamops.state.layout import StateLayout, read_json, write_json_atomic

log = logging.getLogger("streamops.alerts")

FORMATS = ("alertmanager", "text")
TASK_GROUP = "task"  # the group of the alert for a task that failed without judging
DEFAULT_TIMEOUT_S = 3.0
UNSENT_KEPT = 200  # resolved notices kept for the next run while no receiver takes them
ENV_URL, ENV_FORMAT, ENV_TIMEOUT = (
    "STREAMOPS_ALERT_WEBHOOK_URL", "STREAMOPS_ALERT_WEBHOOK_FORMAT", "STREAMOPS_ALERT_TIMEOUT_S")


@dataclass(frozen=True)
class Webhook:
    """Where alerts are posted, in which format, and how long a POST may take."""

    url: str
    format: str = "alertmanager"
    timeout_s: float = DEFAULT_TIMEOUT_S

    def __post_init__(self) -> None:
        if not self.url.startswith(("http://", "https://")):
            raise ConfigError(f"alert webhook {self.where}: not an http(s) URL")
        if self.format not in FORMATS:
            raise ConfigError(f"alert webhook {self.where}: format {self.format!r} is not one "
                              f"of {', '.join(FORMATS)}")  # fmt: skip
        if not self.timeout_s > 0:
            raise ConfigError(f"alert webhook {self.where}: timeout {self.timeout_s} is not > 0")

    @property
    def where(self) -> str:
        """The URL without its path or credentials (a chat webhook's path is its secret)."""
        parts = urlsplit(self.url)
        return f"{parts.scheme}://{parts.hostname}" + (f":{parts.port}" if parts.port else "")

    def redact(self, text: str) -> str:
        path = urlsplit(self.url).path
        return text.replace(path, "/…") if len(path) > 1 else text

    @classmethod
    def of(cls, url: str, fmt: Any = None, timeout: Any = None) -> Webhook:
        """A webhook from text settings (an empty format or timeout: the default)."""
        try:
            seconds = float(timeout) if timeout not in (None, "") else DEFAULT_TIMEOUT_S
        except ValueError as exc:
            raise ConfigError(f"alert webhook {cls(url).where}: timeout {timeout!r} is no "
                              "number") from exc  # fmt: skip
        return cls(url, str(fmt or "alertmanager"), seconds)


def webhooks_from_env(environ: Mapping[str, str] | None = None) -> list[Webhook]:
    """The webhook ``STREAMOPS_ALERT_WEBHOOK_URL`` names (format and timeout beside it)."""
    env = os.environ if environ is None else environ
    url = env.get(ENV_URL, "").strip()
    return [Webhook.of(url, env.get(ENV_FORMAT), env.get(ENV_TIMEOUT))] if url else []


@dataclass(frozen=True)
class Firing:
    """A check that fails now. ``job`` is empty for a cluster-wide check."""

    check: str
    message: str
    job: str = ""
    group: str = ""
    level: str = "fail"

    @property
    def key(self) -> str:
        return f"{self.group}/{self.check}"


@dataclass(frozen=True)
class Scope:
    """What a run judged: the groups of checks and the jobs (``None``: all of them). A firing
    alert in scope that the run no longer reports is resolved; one out of scope fires on."""

    groups: frozenset[str] | None = None
    jobs: frozenset[str] | None = None

    def covers(self, alert: Alert) -> bool:
        if self.groups is not None and alert.group not in self.groups:
            return False
        return self.jobs is None or not alert.job or alert.job in self.jobs


EVERYTHING = Scope()
NOTHING = Scope(groups=frozenset())  # a run that judged nothing (its task crashed)


@dataclass(frozen=True)
class Alert:
    """One alert as remembered and sent: a :class:`Firing` with since when, and when it ended."""

    alertname: str
    check: str
    message: str
    since: float
    job: str = ""
    group: str = ""
    level: str = "fail"
    ended: float | None = None  # resolved at
    generator_url: str = ""

    @property
    def key(self) -> str:
        return f"{self.group}/{self.check}"

    def labels(self) -> dict[str, str]:
        labels = {"alertname": self.alertname, "job": self.job, "check": self.check,
                  "group": self.group, "level": self.level,
                  "severity": "critical" if self.level == "fail" else "warning"}  # fmt: skip
        return {k: v for k, v in labels.items() if v}  # an empty label is no label

    def to_alertmanager(self, ends: float) -> dict[str, Any]:
        body: dict[str, Any] = {
            "labels": self.labels(),
            "annotations": {"summary": _summary(self), "message": self.message},
            "startsAt": _iso(self.since), "endsAt": _iso(self.ended or ends),
        }  # fmt: skip
        if self.generator_url:
            body["generatorURL"] = self.generator_url
        return body

    def to_text(self) -> str:
        if self.ended is not None:
            return f"RESOLVED {_summary(self)} (since {_iso(self.since)}, ended {_iso(self.ended)})"
        return f"FIRING {_summary(self)}: {self.message} (since {_iso(self.since)})"


def _summary(alert: Alert) -> str:
    where = f"job {alert.job}" if alert.job else "cluster"
    return f"{alert.alertname}: {where}, check {alert.check} is {alert.level}"


def _iso(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


@dataclass
class Delivery:
    """What one run sent: the alerts firing and resolved, the receivers that failed."""

    firing: list[Alert] = field(default_factory=list)
    new: list[Alert] = field(default_factory=list)  # firing for the first time
    resolved: list[Alert] = field(default_factory=list)  # this run's and earlier unsent ones
    failed: list[str] = field(default_factory=list)  # "url: why"
    seconds: float = 0.0


def alerts_file(layout: StateLayout, alertname: str) -> Path:
    return layout.root / "alerts" / f"{alertname}.json"


def deliver(
    layout: StateLayout, alertname: str, firing: list[Firing], webhooks: list[Webhook], *,
    scope: Scope = EVERYTHING, ttl_s: float = 900.0, generator_url: str = "",
    now: float | None = None,
) -> Delivery:  # fmt: skip
    """Post what fires and what recovered to every webhook; remember what fired. A firing
    alert not among ``firing`` is resolved when the run judged it (``scope``), else it fires
    on. Never raises for a receiver that fails."""
    now = time.time() if now is None else now
    path = alerts_file(layout, alertname)
    state = _read_state(path)
    before = {a.key: a for a in map(_alert, (state.get("firing") or {}).values())}
    announced = set(state.get("announced") or [])
    unsent = [_alert(a) for a in state.get("unsent_resolved") or []]
    out = Delivery()
    current: dict[str, Alert] = {}
    for f in firing:
        was = before.get(f.key)
        current[f.key] = Alert(alertname, f.check, f.message, was.since if was else now, f.job,
                               f.group, f.level, generator_url=generator_url)  # fmt: skip
    for key, alert in before.items():
        if key in current:
            continue
        if scope.covers(alert):
            out.resolved.append(replace(alert, ended=now, generator_url=generator_url))
        else:
            current[key] = alert  # its job was not judged this run: it fires on
    out.firing = list(current.values())
    out.new = [a for a in out.firing if a.key not in announced]
    again = {a.key for a in out.resolved} | set(current)  # newer news of the same check
    out.resolved = [a for a in unsent if a.key not in again] + out.resolved
    started = time.monotonic()
    for hook in webhooks:
        error = _post(hook, _body(hook, out, now + ttl_s))
        if error:
            out.failed.append(f"{hook.where}: {error}")
    out.seconds = time.monotonic() - started
    delivered = not out.failed
    write_json_atomic(path, {
        "firing": {a.key: asdict(a) for a in out.firing},
        "announced": sorted(a.key for a in out.firing
                            if a.key in announced or delivered),
        "unsent_resolved": [] if delivered else [asdict(a) for a in out.resolved][-UNSENT_KEPT:],
    })  # fmt: skip
    return out


def _read_state(path: Path) -> dict[str, Any]:
    """What fired, as the last run left it; a state that cannot be read starts afresh."""
    try:
        state = read_json(path)
    except (OSError, ValueError) as exc:
        log.warning("cannot read %s (%s): what fired before is forgotten", path, exc)
        return {}
    return state if isinstance(state, dict) else {}


def _alert(data: dict[str, Any]) -> Alert:
    return Alert(**{k: v for k, v in data.items() if k in Alert.__dataclass_fields__})


def _body(hook: Webhook, out: Delivery, ends: float) -> Any | None:
    """What ``hook`` is sent this run (``None``: nothing to say)."""
    if hook.format == "text":
        lines = [a.to_text() for a in out.new + out.resolved]
        return {"text": "\n".join(lines)} if lines else None
    alerts = [a.to_alertmanager(ends) for a in out.firing + out.resolved]
    return alerts or None


def _post(hook: Webhook, body: Any | None) -> str | None:
    """POST ``body`` to ``hook``; the reason it was not taken, or ``None``."""
    import requests

    if body is None:
        return None
    started = time.monotonic()
    try:
        response = requests.post(hook.url, json=body, timeout=hook.timeout_s)
        response.raise_for_status()
    except requests.RequestException as exc:
        seconds, why = time.monotonic() - started, hook.redact(f"{type(exc).__name__}: {exc}")
        log.warning("alert webhook %s did not take the alerts after %.1f s (%s); the run goes "
                    "on, and what it missed is sent again next run", hook.where, seconds,
                    why)  # fmt: skip
        return why
    log.info("alert webhook %s took %d alert(s) (HTTP %d)", hook.where,
             len(body) if isinstance(body, list) else 1, response.status_code)  # fmt: skip
    return None
