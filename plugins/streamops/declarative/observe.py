"""Observe: one snapshot of the world (:mod:`streamops.world.snapshot`) per look, into the
plain values that :mod:`streamops.declarative.decide` judges without I/O. While the master
does not answer the reconcile judges no job: the view says so, and holds none."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from streamops.cluster.client import MasterClient
from streamops.exceptions import StreamopsError
from streamops.job_reads import current_spec, read_submissions
from streamops.job_view import JobView
from streamops.settings import Settings
from streamops.state.savepoints import catalogue
from streamops.world.snapshot import Snapshot, take


@dataclass(frozen=True)
class JobSeen:
    """One job as observed."""

    live: bool = False
    healthy: bool = False
    state: str = "UNKNOWN"
    driver: str | None = None
    version: str | None = None
    ended: bool = False  # its driver ended and no driver of it is live
    running_spec: dict[str, Any] | None = None  # the spec of its (last) submission
    submitted_at: float | None = None  # the last submission
    stopped_at: float | None = None
    stopped_by: str | None = None  # a savepoint with cancel stopped it after its submission
    error: str | None = None


@dataclass(frozen=True)
class SavepointSeen:
    name: str
    job: str
    version: str
    created_at: float
    restorable: bool  # its files are all there (a shallow check)


@dataclass(frozen=True)
class ReconcileView:
    """What one decision looks at: the jobs named, and their savepoints, as a snapshot shows
    them; none while the master is down (``cluster_up`` False)."""

    now: float
    cluster_up: bool
    cluster_error: str = ""
    jobs: dict[str, JobSeen] = field(default_factory=dict)
    savepoints: dict[str, list[SavepointSeen]] = field(default_factory=dict)  # newest first

    def job(self, name: str) -> JobSeen:
        return self.jobs.get(name, JobSeen())


def observe_job(settings: Settings, view: JobView) -> JobSeen:
    """One job of a snapshot, with what the decision needs of its records."""
    name = view.name
    subs = [s for s in read_submissions(settings.layout.submissions_file(name))
            if s.get("event") == "submitted" and not s.get("standby")
            and not s.get("hot_standby")]  # fmt: skip
    try:
        spec: dict[str, Any] | None = current_spec(settings, name).model_dump(mode="json")
    except StreamopsError:
        spec = None
    status = view.status
    submitted_at = float(subs[-1]["at"]) if subs else None
    stopped_by = None
    if submitted_at and status.stopped_since(submitted_at):
        stopped_by = status.savepoint or status.stopped_by
    return JobSeen(
        live=view.is_live, healthy=view.healthy, state=view.state, driver=view.driver_id,
        version=view.version, ended=not view.is_live and bool(subs), running_spec=spec,
        submitted_at=submitted_at, stopped_at=status.stopped_at or None,
        stopped_by=stopped_by,
        error=status.error[:500] if status.error else None,
    )  # fmt: skip


def savepoints_of(settings: Settings, snapshot: Snapshot, job: str) -> list[SavepointSeen]:
    layout = settings.layout
    out = []
    for info in snapshot.savepoints_of(job):
        try:
            restorable = not catalogue.check_savepoint(layout, info.name)
        except StreamopsError:
            restorable = False
        out.append(SavepointSeen(info.name, info.job, info.version, info.created_at, restorable))
    return out


def observe(settings: Settings, jobs: list[str], *, with_savepoints: set[str] | None = None,
            client: MasterClient | None = None) -> ReconcileView:  # fmt: skip
    """The named jobs (and the savepoints of those in ``with_savepoints``) as one snapshot
    shows them now. A master that does not answer is said, and no job is judged."""
    snapshot = take(settings, jobs, client=client)
    if not snapshot.master_up:
        return ReconcileView(snapshot.taken_at, cluster_up=False,
                             cluster_error=snapshot.master_error)  # fmt: skip
    seen = {name: observe_job(settings, snapshot.jobs[name]) for name in jobs}
    saved = {job: savepoints_of(settings, snapshot, job) for job in sorted(with_savepoints or ())}
    return ReconcileView(snapshot.taken_at, cluster_up=True, jobs=seen, savepoints=saved)
