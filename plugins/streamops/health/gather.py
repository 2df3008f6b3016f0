"""Gathering what the health checks look at: the one place of a health run that does I/O.

:func:`gather` takes one snapshot of the world (:mod:`streamops.world.snapshot`: the
master's JSON and every job, or without the master the jobs as the state root shows them),
reads the procedures in progress from its intent records (:mod:`streamops.health.procedures`),
and reads what the checked groups need besides: this state root's workers (pid files, the
addresses their logs name), the sources' probes (:mod:`streamops.world.source_probes`), the jobs'
stores. It returns a :class:`~streamops.health.report.HealthInputs`, a plain value that the
checks of :mod:`streamops.health.checks` judge without any I/O. What is gathered for one
check (the workers, a source, a store) and raises is kept as that check's error, to fail it
alone.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Collection, Iterable, Sequence
from typing import Any

from streamops.cluster import daemons
from streamops.cluster.capacity import Need
from streamops.cluster.profile import ClusterProfile
from streamops.cluster.status import ClusterStatus, build_status
from streamops.cluster.worker_names import started_addresses
from streamops.exceptions import Unhealthy
from streamops.health.daemons import gather_daemons
from streamops.health.procedures import gather_procedures
from streamops.health.report import HealthInputs, SinkSeen, Thresholds, WorkersSeen
from streamops.job_reads import current_spec, read_submissions, spec_args
from streamops.job_view import JobView
from streamops.settings import Settings
from streamops.state.cluster_size import desired_workers
from streamops.state.job_status import read_status
from streamops.state.layout import StateLayout
from streamops.tracebacks import describe
from streamops.world.snapshot import take
from streamops.world.source_probes import Prober, SourceProbe, probe_job

log = logging.getLogger("streamops.health.gather")

GROUPS = ("cluster", "jobs", "progress", "sources", "sinks")
NEVER_SUBMITTED = "never submitted"


def declared_jobs(layout: StateLayout, busy: Collection[str] = ()) -> list[str]:
    """Jobs that should be running: submitted, not cancelled nor deliberately stopped since;
    and every job of ``busy`` (one a procedure in progress stopped to start it again, or
    one that runs)."""
    return [n for n in layout.known_jobs() if n in busy or dormant_reason(layout, n) is None]


def dormant_reason(layout: StateLayout, name: str) -> str | None:
    """Why a job of the state root is not expected to run (``None``: it is): never submitted,
    cancelled, or stopped by a savepoint with cancel after its last submission."""
    events = [
        s
        for s in read_submissions(layout.submissions_file(name))
        if s.get("event") in ("submitted", "cancelled")
    ]
    if not events:
        return NEVER_SUBMITTED
    last = events[-1]
    if last["event"] != "submitted":
        return f"cancelled at {_when(last.get('at'))}"
    status = read_status(layout, name)
    if status.stopped_since(float(last.get("at") or 0)):
        saved = f" to savepoint {status.savepoint}" if status.savepoint else ""
        return f"stopped by a savepoint with cancel{saved} at {_when(status.stopped_at)}"
    return None


def _when(at: Any) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(float(at or 0)))


def expected_workers(settings: Settings, thresholds: Thresholds) -> int:
    """The ALIVE workers health expects: the threshold if given, else the count the last scale
    recorded (:mod:`streamops.state.cluster_size`), else the cluster profile's."""
    if thresholds.expected_workers is not None:
        return thresholds.expected_workers
    desired = desired_workers(settings.layout)
    if desired is not None:
        return desired
    return ClusterProfile.for_config_dir(settings.config_dir).workers


def gather(
    settings: Settings, thresholds: Thresholds, jobs: Sequence[str] | None = None,
    groups: Iterable[str] = GROUPS,
) -> HealthInputs:  # fmt: skip
    """Read everything the checks of ``groups`` look at, once: one snapshot of the world (the
    master asked once), the procedures in progress, the view of every job to check (default:
    the declared ones, and those a procedure stopped), and what the groups need besides
    (workers, source probes, stores). The only I/O of a health run."""
    wanted = set(groups)
    layout = settings.layout
    snapshot = take(settings)  # master down: the jobs as the state root shows them
    views, master = snapshot.jobs, snapshot.master
    known = set(views)
    expected = expected_workers(settings, thresholds)
    procedures = gather_procedures(settings, sorted(known), expected, snapshot.intents)
    # expected to run besides the declared jobs: those a procedure in progress stopped, and
    # those running (whatever their last submission event says, e.g. a killed standby's)
    busy = {p.job for p in procedures if p.job and not p.closed}
    running = {n for n, v in views.items() if v.is_live and v.status.state == "RUNNING"}
    names = list(jobs) if jobs else declared_jobs(layout, busy | running)
    obs = HealthInputs(settings, thresholds, master, names)
    obs.procedures = [p for p in procedures if p.job is None or p.job in names]
    reasons = {n: dormant_reason(layout, n) for n in sorted(known - set(names))}
    obs.dormant = {n: why for n, why in reasons.items()
                   if why is not None and why != NEVER_SUBMITTED}  # fmt: skip
    obs.views = {n: v for n, v in views.items() if n in names}
    obs.needs = job_needs(settings, names)
    if wanted & {"cluster", "jobs"} and master is not None:  # jobs: capacity by node name
        try:
            obs.workers = _gather_workers(settings, thresholds, master)
        except Exception as exc:  # the workers check fails naming it; the others still run
            obs.workers = WorkersSeen(expected_workers(settings, thresholds), error=describe(exc))
    if "cluster" in wanted:
        try:
            obs.daemons = gather_daemons(layout)
        except Exception as exc:  # the daemons check fails naming it; the others still run
            obs.daemons_error = describe(exc)
    if "sources" in wanted:
        prober = Prober(obs.http_timeout)
        obs.sources = {v.name: _probe_sources(settings, prober, v) for v in obs.live_views}
    if "sinks" in wanted:
        obs.sinks = {v.name: _gather_sink(settings, v.name) for v in obs.live_views}
    return obs


def job_needs(settings: Settings, jobs: Iterable[str]) -> dict[str, Need]:
    """What each job's recorded spec holds (a job without a readable spec is left out: the
    capacity checks then know nothing of it, its own check says why)."""
    out = {}
    for job in jobs:
        try:
            out[job] = Need.of_spec(current_spec(settings, job))
        except Exception as exc:  # health never crashes on one job's odd record
            log.warning("job %s: no spec to size its capacity: %s", job, describe(exc))
    return out


def _gather_workers(
    settings: Settings, thresholds: Thresholds, master: dict[str, Any]
) -> WorkersSeen:
    expected = expected_workers(settings, thresholds)
    status = cluster_status(settings, master)
    return WorkersSeen(expected, status.workers, _worker_log_names(settings.layout))


def cluster_status(settings: Settings, master: dict[str, Any]) -> ClusterStatus:
    """The master's ``/json/`` joined with this state root's pid files (workers by name)."""
    layout = settings.layout
    records = {
        n: r
        for n in daemons.pid_file_names(layout)
        if (r := daemons.read_pid_file(layout, n)) is not None
    }
    return build_status(settings, records, master)


def _worker_log_names(layout: StateLayout) -> dict[str, str]:
    """``host:port`` → the worker of this state root whose log says it started there."""
    return {f"{host}:{port}": name
            for (host, port), name in started_addresses(layout.logs_dir).items()}  # fmt: skip


def _probe_sources(settings: Settings, prober: Prober, view: JobView) -> dict[str, SourceProbe]:
    try:
        args = spec_args(settings, view.name) or {}
    except Exception as exc:  # an unreadable spec: this job's sources fail, the others' not
        return {"sources": SourceProbe("sources", "?", "?", error=describe(exc))}
    return probe_job(prober, view, args)


def _gather_sink(settings: Settings, job: str) -> SinkSeen:
    url = None
    try:
        args = spec_args(settings, job)
        if args is None:
            return SinkSeen(declared=False)
        url = args.get("store_url")
        if not url:
            return SinkSeen(declared=True)
        return SinkSeen(True, str(url), newest_write(str(url)))
    except Unhealthy as exc:
        return SinkSeen(True, str(url), error=str(exc))
    except Exception as exc:  # e.g. a store URL of an unknown dialect: this sink's fail alone
        return SinkSeen(True, str(url) if url else None, error=describe(exc))


def newest_write(url: str) -> float | None:
    """The newest ``updated_at`` over the store's tables that have one (``None``: no rows)."""
    from sqlalchemy import MetaData, create_engine, func, select
    from sqlalchemy.exc import SQLAlchemyError

    engine = create_engine(url)
    try:
        meta = MetaData()
        meta.reflect(engine)
        with engine.connect() as conn:
            times = [
                conn.execute(select(func.max(t.c.updated_at))).scalar()
                for t in meta.tables.values()
                if "updated_at" in t.c
            ]
    except SQLAlchemyError as exc:
        raise Unhealthy(f"cannot read the store {engine.url!r}: {exc}") from exc
    finally:
        engine.dispose()
    found = [float(t) for t in times if t is not None]
    return max(found) if found else None
