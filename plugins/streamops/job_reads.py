"""The read side of the jobs: a job's ``JobView`` built from the state root and the master's
document, and the job's records read (its submissions, the spec it runs).

A job's identity is its name, never a driver id: a driver relaunched by ``--supervise``
gets a new id. A job's view combines three observations:

- ``jobs/<job>/status.json``, written by the driver itself (its driver id, app id, stages);
- ``jobs/<job>/submissions.jsonl``, written by the ops side on every submit and cancel;
- the master's JSON: active and completed drivers, active applications (named by job).

Nothing here asks the master or changes anything: :func:`view_of` is given the master's
``/json/`` document, fetched by its caller, or ``None`` when the master did not answer (then
the state root alone shows the job). The commands and waits on a job are
:class:`streamops.jobs.JobRegistry`'s; every job at once is :func:`streamops.world.snapshot.take`.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from streamops.cluster.client import DriverInfo, WorkerInfo
from streamops.cluster.worker_names import WorkerNames, worker_names
from streamops.exceptions import JobNotFound, StreamopsError
from streamops.job_drivers import recorded_ids
from streamops.job_view import LIVE_DRIVER_STATES, JobView
from streamops.settings import Settings
from streamops.spec import JobSpec, spec_from_dict
from streamops.state.job_status import JobStatus, read_status
from streamops.state.layout import StateLayout, read_json
from streamops_contract.names import check_name
from streamops_contract.records import read_jsonl
from streamops_contract.recovery import driver_app_names
from streamops_contract.state.lease import Lease, read_lease


def read_submissions(path: Path) -> list[dict[str, Any]]:
    """The records of ``path`` (a torn last line after a crash is skipped)."""
    return read_jsonl(path)


def current_spec(settings: Settings, job: str) -> JobSpec:
    """The spec of the running driver's submission (else the last one that was no standby)."""
    subs = [
        s for s in read_submissions(settings.layout.submissions_file(job))
        if s.get("event") == "submitted" and s.get("spec")
    ]  # fmt: skip
    if not subs:
        raise JobNotFound(f"job {job} has no recorded submission; submit it first")
    running = read_status(settings.layout, job).driver_id
    chosen = [s for s in subs if running and s.get("driver_id") == running] or [
        s for s in subs if not s.get("standby")
    ] or subs  # fmt: skip
    return spec_from_dict(chosen[-1]["spec"], f"last submission of {job}")


def spec_args(settings: Settings, job: str) -> dict[str, Any] | None:
    """The resolved args of the job's last submitted spec; ``None`` if none is recorded."""
    try:
        spec = current_spec(settings, job)
    except StreamopsError:
        return None
    return dict(spec.resolved_args(state_root=str(settings.state_root)))


def submitted_at(settings: Settings, job: str, driver_id: str) -> float | None:
    """When ``driver_id`` was submitted as ``job``, from its submissions (None: never)."""
    return next(
        (
            float(s["at"])
            for s in read_submissions(settings.layout.submissions_file(job))
            if s.get("event") == "submitted" and s.get("driver_id") == driver_id
            and s.get("at") is not None
        ),
        None,
    )  # fmt: skip


def active_drivers(master: dict[str, Any]) -> list[DriverInfo]:
    """The drivers ``master`` (its ``/json/``) lists as active, whatever their state."""
    return [DriverInfo.from_json(d) for d in master.get("activedrivers") or []]


def view_of(settings: Settings, name: str, master: dict[str, Any] | None) -> JobView:
    """The job ``name`` as ``master`` (the master's ``/json/``, fetched by the caller) and the
    state root show it; with ``master`` None (it did not answer), as the state root alone
    shows it: live while its driver keeps the job's lease fresh (a driver heartbeats it every
    few seconds while it runs, whatever the master's fate)."""
    check_name("job", name)
    if master is None:
        return _from_state(settings.layout, name)
    return _in_master(settings, name, master)


def standby_drivers(
    settings: Settings, name: str, submitted: list[dict[str, Any]], active: list[DriverInfo],
    hot: dict[str, Any] | None = None,
) -> set[str]:  # fmt: skip
    """Live drivers of ``name`` among ``active`` that are hot standbys: submitted as one, or
    armed as one (a relaunched driver whose standby took the job over stands by in its turn);
    ``hot``: the job's hot standby file, read when not given."""
    ids = {s["driver_id"] for s in submitted if s.get("hot_standby") and s.get("driver_id")}
    if hot is None:
        hot = read_json(settings.layout.hot_standby_file(name)) or {}
    if hot.get("driver_id"):
        ids.add(str(hot["driver_id"]))
    return {d.id for d in active if d.id in ids and d.state in LIVE_DRIVER_STATES}


def _from_state(layout: StateLayout, name: str) -> JobView:
    status = read_status(layout, name)
    held = read_lease(layout, name)
    live = held is not None and held.fresh
    last = status.last_batch_at()
    return JobView(
        name=name,
        version=status.version,
        state=str(status.state or "UNKNOWN") if live else _not_running(status, held),
        is_live=live,
        driver_id=held.holder if live and held else None,
        driver_state=None,
        worker=None,
        last_batch_age=round(time.time() - last, 1) if last else None,
        input_rows_per_second=status.rate("input_rows_per_second"),
        processed_rows_per_second=status.rate("processed_rows_per_second"),
        status=status,
    )


def _in_master(settings: Settings, name: str, master: dict[str, Any]) -> JobView:
    layout = settings.layout
    status = read_status(layout, name)
    submitted = [
        s for s in read_submissions(layout.submissions_file(name)) if s.get("event") == "submitted"
    ]
    candidates = [c for c in (status.driver_id,) if c]
    candidates += [
        s["driver_id"] for s in reversed(submitted)
        if s.get("driver_id") and not s.get("hot_standby") and not _held(layout, name, s)
    ]  # fmt: skip
    active = active_drivers(master)
    done = [DriverInfo.from_json(d) for d in master.get("completeddrivers") or []]
    live = next(
        (d for c in candidates for d in active if d.id == c and d.state in LIVE_DRIVER_STATES),
        None,
    )
    app_live = any(
        a.get("name") == name and a.get("state") in ("RUNNING", "WAITING")
        for a in master.get("activeapps") or []
    )
    if live is None and not app_live:
        live = _relaunched(layout, name, active, submitted)
    finished = next((d for c in candidates for d in done if d.id == c), None)
    last = status.last_batch_at()
    names = _worker_names(layout, master) if live and live.worker else None
    return JobView(
        name=name,
        version=status.version or (submitted[-1].get("version") if submitted else None),
        state=_state(status, live, app_live, finished),
        is_live=live is not None or app_live,
        driver_id=live.id if live else (status.driver_id if app_live else None),
        driver_state=(live or finished).state if (live or finished) else None,
        worker=names.name(live.worker) if live and names else None,
        worker_address=names.address(live.worker) if live and names else None,
        last_batch_age=round(time.time() - last, 1) if last else None,
        input_rows_per_second=status.rate("input_rows_per_second"),
        processed_rows_per_second=status.rate("processed_rows_per_second"),
        status=status,
        standby=_standby(settings, name, submitted, active, live.id if live else None),
    )


def _held(layout: StateLayout, name: str, submission: dict[str, Any]) -> bool:
    """Whether ``submission`` is a warm standby not released (no go file): it waits beside
    the job and runs none of it, so it is never the job's driver (an upgrade that failed
    between the savepoint and the release leaves one until it is aborted)."""
    token = submission.get("token")
    return bool(token and submission.get("standby")
                and not layout.standby_go_file(name, str(token)).is_file())  # fmt: skip


def _relaunched(
    layout: StateLayout, name: str, active: list[DriverInfo], submitted: list[dict[str, Any]]
) -> DriverInfo | None:
    """The master's relaunch of the job's driver that no record names yet: a supervised
    driver whose node died is relaunched under a new id, and until it has started (and
    recorded itself) only the master's recovery file says whose it is. Without it the job
    would look ended in that window, and a procedure would restore it beside it."""
    recorded = recorded_ids(layout, name, submitted)
    names = driver_app_names(layout.recovery_dir)
    found = [d for d in active if d.state in LIVE_DRIVER_STATES
             and d.id not in recorded and names.get(d.id) == name]  # fmt: skip
    return max(found, key=lambda d: d.id) if found else None


def _worker_names(layout: StateLayout, master: dict[str, Any]) -> WorkerNames:
    entries = [WorkerInfo.from_json(w) for w in master.get("workers") or []]
    return worker_names(layout.logs_dir, entries)


def _standby(
    settings: Settings, name: str, submitted: list[dict[str, Any]], active: list[DriverInfo],
    primary: str | None,
) -> str | None:  # fmt: skip
    """A hot job's live standby driver: ``armed`` once it wrote its file, else ``starting``
    (it waits for the running driver, then builds and warms up)."""
    doc = read_json(settings.layout.hot_standby_file(name)) or {}
    ids = standby_drivers(settings, name, submitted, active, doc) - {primary}
    if not ids:
        return None
    armed = doc.get("driver_id") if doc.get("armed_at") else None
    chosen = armed if armed in ids else sorted(ids)[-1]
    if chosen != armed:
        return f"{chosen} starting"
    if doc.get("beside_primary"):  # it stayed after its moves: that node's loss takes both
        return f"{chosen} armed on the driver's worker"
    return f"{chosen} armed"


def _state(status: JobStatus, live: DriverInfo | None, app_live: bool,
           finished: DriverInfo | None) -> str:  # fmt: skip
    if live is not None:
        if status.driver_id == live.id and status.state:
            return status.state
        return "SUBMITTED" if live.state == "SUBMITTED" else "STARTING"
    if app_live:
        return "RELAUNCHING"
    if finished is not None:
        return finished.state
    return str(status.state or "NOT_SUBMITTED")


def _not_running(status: JobStatus, held: Lease | None) -> str:
    """The state of a job whose lease no driver keeps fresh: its last status, and the lease's."""
    last = status.state
    lease = f"lease of {held.holder} expired" if held is not None else "no lease"
    return f"NOT RUNNING ({lease}{f', last {last}' if last else ''})"
