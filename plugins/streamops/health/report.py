"""The results of health checks and their history.

A check gives a :class:`CheckResult` (``ok`` / ``warn`` / ``fail`` and a message naming what
is wrong); one run's results make a :class:`HealthReport`, whose level is the worst of them.
Every run may be appended to ``<state>/health/history.jsonl`` (:func:`record`);
:func:`read_history` reads the last runs back. The checks themselves are in
:mod:`streamops.health.checks`.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from streamops.agent.supervision import SupervisionRecord
from streamops.cluster.capacity import FAILOVER_GOAL, Need
from streamops.cluster.status import WorkerStatus
from streamops.exceptions import Unhealthy
from streamops.job_view import JobView
from streamops.settings import Settings
from streamops.state.layout import StateLayout, append_jsonl
from streamops.world.source_probes import SourceProbe


class Level(StrEnum):
    OK = "ok"
    WARN = "warn"
    FAIL = "fail"


_RANK = {Level.OK: 0, Level.WARN: 1, Level.FAIL: 2}


class Thresholds(BaseModel):
    """Limits of the checks; every field has a default, so ``Thresholds()`` is usable."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    expected_workers: int | None = Field(
        default=None, ge=0,
        description="ALIVE workers expected (default: the last scale's count, else the "
        "cluster profile's)",
    )
    max_batch_age: float = Field(
        default=120.0, gt=0, description="seconds a busy stage may go without committing"
    )
    min_rate_ratio: float = Field(
        default=0.8, ge=0, description="warn when processed rows/s < ratio x input rows/s"
    )
    min_behind_batches: int = Field(
        default=3, ge=1,
        description="batches in a row, each processing slower than its rows came, before the "
        "rates warn (one such batch is one a little longer than the one before)",
    )
    min_input_rate: float = Field(
        default=5.0, ge=0, description="input rows/s below which rates are not compared"
    )
    backlog_warn_records: int = Field(default=5_000, ge=0)
    backlog_fail_records: int = Field(default=50_000, ge=0)
    backlog_warn_files: int = Field(default=50, ge=0)
    backlog_fail_files: int = Field(default=500, ge=0)
    backlog_warn_entries: int = Field(
        default=1_000, ge=0, description="journal entries: 100 s behind at the tutorial's 10/s"
    )
    backlog_fail_entries: int = Field(
        default=4_500, ge=0,
        description="journal entries: half the journal's default capacity (9000); further "
        "behind, entries are soon dropped unread",
    )
    max_source_degraded: float = Field(
        default=120.0, gt=0, description="seconds a source may be degraded before it fails"
    )
    recent_loss_window: float = Field(
        default=3600.0, gt=0, description="seconds a counted loss or late file stays a warning"
    )
    max_sink_age: float = Field(
        default=300.0, gt=0, description="seconds a store may go unwritten while data flows"
    )
    max_core_wait: float = Field(
        default=FAILOVER_GOAL, gt=0,
        description="seconds a job's application may wait for its executors' cores (the "
        "failover goal): longer, the job is down and health fails naming the cause",
    )

    @property
    def backlog_limits(self) -> dict[str, tuple[int, int]]:
        """Per unit a source's backlog counts (:data:`~streamops.world.source_probes.UNITS`):
        the backlog above which it warns, and above which it fails."""
        return {"records": (self.backlog_warn_records, self.backlog_fail_records),
                "files": (self.backlog_warn_files, self.backlog_fail_files),
                "entries": (self.backlog_warn_entries, self.backlog_fail_entries)}  # fmt: skip


@dataclass(frozen=True)
class CheckResult:
    group: str
    name: str
    level: Level
    message: str

    def to_json(self) -> dict[str, str]:
        return {
            "group": self.group,
            "name": self.name,
            "level": self.level.value,
            "message": self.message,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CheckResult:
        return cls(
            str(data["group"]), str(data["name"]), Level(data["level"]), str(data["message"])
        )


@dataclass(frozen=True)
class HealthReport:
    """The results of one run; ``level`` is the worst of them."""

    at: float
    results: tuple[CheckResult, ...]

    @property
    def level(self) -> Level:
        return max((r.level for r in self.results), key=_RANK.__getitem__, default=Level.OK)

    @property
    def ok(self) -> bool:
        return self.level is not Level.FAIL

    def failures(self) -> list[CheckResult]:
        return [r for r in self.results if r.level is Level.FAIL]

    def summary(self) -> str:
        """One line: every failure (or warning) by name, ``healthy`` when none."""
        bad = self.failures() or [r for r in self.results if r.level is Level.WARN]
        return "; ".join(r.message for r in bad) or f"healthy ({len(self.results)} checks ok)"

    def raise_if_failed(self) -> None:
        failures = self.failures()
        if failures:
            raise Unhealthy(
                f"{len(failures)} health check(s) failed: " + "; ".join(r.message for r in failures)
            )

    def to_json(self) -> dict[str, Any]:
        return {
            "at": self.at,
            "level": self.level.value,
            "summary": self.summary(),
            "results": [r.to_json() for r in self.results],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> HealthReport:
        return cls(float(data["at"]), tuple(CheckResult.from_json(r) for r in data["results"]))


HISTORY_MAX_BYTES = 8 * 1024 * 1024
HISTORY_KEEP = 4000  # runs kept when the file is trimmed: two weeks of 5-minute checks


def record(
    layout: StateLayout, report: HealthReport, *, source: str = "cli",
    max_bytes: int = HISTORY_MAX_BYTES, keep: int = HISTORY_KEEP,
) -> None:  # fmt: skip
    """Append the report to ``<state>/health/history.jsonl``; past ``max_bytes`` the file is
    rewritten (atomically) with its last ``keep`` runs, so months of checks stay small."""
    path = layout.health_history
    append_jsonl(path, {**report.to_json(), "source": source})
    if path.stat().st_size > max_bytes:
        lines = path.read_text(encoding="utf-8").splitlines()[-keep:]
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
        os.replace(tmp, path)


def read_history(layout: StateLayout, last: int = 20) -> list[dict[str, Any]]:
    """The last ``last`` history records, oldest first (a torn line is skipped)."""
    path = layout.health_history
    if not path.is_file():
        return []
    out = []
    for line in path.read_text(encoding="utf-8").splitlines()[-last:]:
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return out


@dataclass(frozen=True)
class WorkersSeen:
    """What the workers check reads: the expected count, this state root's workers joined
    with the master's entries, and the names its worker logs give to addresses."""

    expected: int
    workers: tuple[WorkerStatus, ...] = ()
    log_names: dict[str, str] = field(default_factory=dict)  # "host:port" -> worker name
    error: str | None = None  # gathering them raised (:func:`streamops.tracebacks.describe`)


@dataclass(frozen=True)
class SinkSeen:
    """What the sinks check reads of one job's store."""

    declared: bool  # a spec is recorded
    store_url: str | None = None
    newest_write: float | None = None  # the newest ``updated_at`` (None: no rows)
    error: str | None = None  # the store could not be read


@dataclass(frozen=True)
class ProcedureSeen:
    """One unfinished procedure (or one lately closed as failed), from its intent record."""

    kind: str  # upgrade | restart | cluster-restart | scale | reconcile (any intent's kind)
    job: str | None  # None: the whole cluster (or a declarative resource: ``key``)
    what: str  # "upgrade v1 → v2 (savepoint …)"
    owner: str  # cli, rebalance, cluster-restart, airflow:<dag>/<run>
    phase: str
    next_step: str | None
    since: float  # when it began
    at: float  # when its phase was recorded
    resume: str  # the command (or the DAG run) that resumes it
    stopped: bool = False  # it has stopped the job (a savepoint with cancel was requested)
    failure: str | None = None
    closed: bool = False  # closed as failed by a step that changed nothing: nothing to resume
    key: str | None = None  # whose record it is when no job's (a resource's ``<Kind>-<name>``)
    fails: bool = True  # unfinished, it fails health (else it warns: it stops no job)

    @property
    def label(self) -> str:
        return f"{self.what} of {self.job}" if self.job else self.what


@dataclass
class HealthInputs:
    """Everything the checks look at, gathered once (:func:`streamops.health.checks.gather`) before
    any of them judges: a plain value, so every check is a pure function of it."""

    settings: Settings
    thresholds: Thresholds
    master: dict[str, Any] | None
    jobs: list[str]
    views: dict[str, JobView] = field(default_factory=dict)
    now: float = field(default_factory=time.time)
    http_timeout: float = 5.0
    workers: WorkersSeen | None = None  # gathered for the cluster group
    daemons: dict[str, SupervisionRecord] | None = None  # node -> its agent's supervision
    daemons_error: str | None = None  # gathering the supervision records raised
    sources: dict[str, dict[str, SourceProbe]] = field(default_factory=dict)  # job -> source
    sinks: dict[str, SinkSeen] = field(default_factory=dict)  # job -> its store
    procedures: list[ProcedureSeen] = field(default_factory=list)  # unfinished ones
    dormant: dict[str, str] = field(default_factory=dict)  # job not expected to run -> why
    needs: dict[str, Need] = field(default_factory=dict)  # job -> what its spec holds

    @property
    def live_views(self) -> list[JobView]:
        return [v for n in self.jobs if (v := self.views.get(n)) is not None and v.is_live]
