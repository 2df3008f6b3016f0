"""The job registry: what runs under each job name, seen from the ops side.

A job's identity is its name, never a driver id: a driver relaunched by ``--supervise``
gets a new id. A job's view combines three observations:

- ``jobs/<job>/status.json``, written by the driver itself (its driver id, app id, stages);
- ``jobs/<job>/submissions.jsonl``, written by the ops side on every submit and cancel;
- the master's JSON: active and completed drivers, active applications (named by job).

The registry holds the commands (cancel, kill, clear orphans) and the reads of one job
(its view, a wait's poll, the waits). Every job at once, with the master's document and the
fallback when the master does not answer, is :func:`streamops.world.snapshot.take`.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

from streamops.cluster.client import DriverInfo, MasterClient, WorkerInfo
from streamops.cluster.worker_names import WorkerNames, worker_names
from streamops.exceptions import JobError, JobNotFound, StreamopsError
from streamops.job_drivers import drivers_of, recorded_ids, warm_standbys
from streamops.job_view import LIVE_DRIVER_STATES, JobView
from streamops.settings import Settings
from streamops.spec import JobSpec, spec_from_dict
from streamops.state.job_status import JobStatus, read_status
from streamops.state.layout import read_json
from streamops.verdict import ERROR_CHARS, Observation, Outcome, health_verdict, timed_out
from streamops_contract.names import check_name
from streamops_contract.records import Cancellation, append_record, read_jsonl
from streamops_contract.recovery import driver_app_names
from streamops_contract.state import lease
from streamops_contract.state.lease import read_lease

log = logging.getLogger("streamops.jobs")

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


def read_submissions(path: Path) -> list[dict[str, Any]]:
    """The records of ``path`` (a torn last line after a crash is skipped)."""
    return read_jsonl(path)


class JobRegistry:
    def __init__(self, settings: Settings, client: MasterClient | None = None) -> None:
        self.settings = settings
        self.layout = settings.layout
        self.client = client or MasterClient(settings)

    def names(self) -> list[str]:
        return self.layout.known_jobs()

    def view(self, name: str) -> JobView:
        check_name("job", name)
        return self.view_in(name, self.client.state())

    def list(self) -> list[JobView]:
        master = self.client.state()
        return [self.view_in(n, master) for n in self.names()]

    def view_from_state(self, name: str) -> JobView:
        """The job as the state root alone shows it, for when the master does not answer: live
        while its driver keeps the job's lease fresh (a driver heartbeats it every few
        seconds while it runs, whatever the master's fate)."""
        status = read_status(self.layout, check_name("job", name))
        held = read_lease(self.layout, name)
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

    def view_in(self, name: str, master: dict[str, Any]) -> JobView:
        """The job as ``master`` (the master's ``/json/``, fetched by the caller) and the state
        root show it."""
        status = read_status(self.layout, name)
        submitted = [
            s
            for s in read_submissions(self.layout.submissions_file(name))
            if s.get("event") == "submitted"
        ]
        candidates = [c for c in (status.driver_id,) if c]
        candidates += [
            s["driver_id"] for s in reversed(submitted)
            if s.get("driver_id") and not s.get("hot_standby") and not self._held(name, s)
        ]  # fmt: skip
        active = [DriverInfo.from_json(d) for d in master.get("activedrivers") or []]
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
            live = self._relaunched(name, active, submitted)
        finished = next((d for c in candidates for d in done if d.id == c), None)
        state = _state(status, live, app_live, finished)
        last = status.last_batch_at()
        names = self._worker_names(master) if live and live.worker else None
        return JobView(
            name=name,
            version=status.version or (submitted[-1].get("version") if submitted else None),
            state=state,
            is_live=live is not None or app_live,
            driver_id=live.id if live else (status.driver_id if app_live else None),
            driver_state=(live or finished).state if (live or finished) else None,
            worker=names.name(live.worker) if live and names else None,
            worker_address=names.address(live.worker) if live and names else None,
            last_batch_age=round(time.time() - last, 1) if last else None,
            input_rows_per_second=status.rate("input_rows_per_second"),
            processed_rows_per_second=status.rate("processed_rows_per_second"),
            status=status,
            standby=self._standby(name, submitted, active, live.id if live else None),
        )

    def _held(self, name: str, submission: dict[str, Any]) -> bool:
        """Whether ``submission`` is a warm standby not released (no go file): it waits
        beside the job and runs none of it, so it is never the job's driver (an upgrade that
        failed between the savepoint and the release leaves one until it is aborted)."""
        token = submission.get("token")
        return bool(token and submission.get("standby")
                    and not self.layout.standby_go_file(name, str(token)).is_file())  # fmt: skip

    def _relaunched(
        self, name: str, active: list[DriverInfo], submitted: list[dict[str, Any]]
    ) -> DriverInfo | None:
        """The master's relaunch of the job's driver that no record names yet: a supervised
        driver whose node died is relaunched under a new id, and until it has started (and
        recorded itself) only the master's recovery file says whose it is. Without it the
        job would look ended in that window, and a procedure would restore it beside it."""
        recorded = recorded_ids(self.layout, name, submitted)
        names = driver_app_names(self.layout.recovery_dir)
        found = [d for d in active if d.state in LIVE_DRIVER_STATES
                 and d.id not in recorded and names.get(d.id) == name]  # fmt: skip
        return max(found, key=lambda d: d.id) if found else None

    def _worker_names(self, master: dict[str, Any]) -> WorkerNames:
        entries = [WorkerInfo.from_json(w) for w in master.get("workers") or []]
        return worker_names(self.layout.logs_dir, entries)

    def _standby(
        self, name: str, submitted: list[dict[str, Any]], active: list[DriverInfo],
        primary: str | None,
    ) -> str | None:  # fmt: skip
        """A hot job's live standby driver: ``armed`` once it wrote its file, else
        ``starting`` (it waits for the running driver, then builds and warms up)."""
        doc = read_json(self.layout.hot_standby_file(name)) or {}
        ids = self.standby_drivers(name, submitted, active, doc) - {primary}
        if not ids:
            return None
        armed = doc.get("driver_id") if doc.get("armed_at") else None
        chosen = armed if armed in ids else sorted(ids)[-1]
        if chosen != armed:
            return f"{chosen} starting"
        if doc.get("beside_primary"):  # it stayed after its moves: that node's loss takes both
            return f"{chosen} armed on the driver's worker"
        return f"{chosen} armed"

    def standby_drivers(
        self, name: str, submitted: list[dict[str, Any]] | None = None,
        active: list[DriverInfo] | None = None, hot: dict[str, Any] | None = None,
    ) -> set[str]:  # fmt: skip
        """Live drivers of ``name`` that are hot standbys: submitted as one, or armed as one
        (a relaunched driver whose standby took the job over stands by in its turn)."""
        if submitted is None:
            submitted = read_submissions(self.layout.submissions_file(name))
        if active is None:
            active = self.client.active_drivers()
        ids = {s["driver_id"] for s in submitted if s.get("hot_standby") and s.get("driver_id")}
        if hot is None:
            hot = read_json(self.layout.hot_standby_file(name)) or {}
        if hot.get("driver_id"):
            ids.add(str(hot["driver_id"]))
        return {d.id for d in active if d.id in ids and d.state in LIVE_DRIVER_STATES}

    def current_spec(self, name: str) -> JobSpec:
        """The spec of ``name``'s running driver's submission (:func:`current_spec`)."""
        return current_spec(self.settings, name)

    def wait_driver_ended(self, name: str, driver_id: str | None, timeout: float) -> None:
        """Wait until ``driver_id`` (else any driver of ``name``) is no longer live on the
        master; a warm standby of the job may be live beside it."""
        deadline = time.monotonic() + timeout
        while self.driver_live(driver_id) if driver_id else self.view(name).is_live:
            if time.monotonic() > deadline:
                raise JobError(f"job {name}: driver {driver_id} still running {timeout:.0f}s "
                               "after it was told to stop")  # fmt: skip
            time.sleep(0.2)

    def driver_live(self, driver_id: str) -> bool:
        """Whether the master lists ``driver_id`` among its live drivers."""
        return any(
            d.id == driver_id and d.state in LIVE_DRIVER_STATES
            for d in self.client.active_drivers()
        )

    def observe(self, name: str, since_driver: str | None = None) -> Observation:
        """One poll of a health wait: the job's view and, when the view shows another driver
        than ``since_driver``, whether ``since_driver`` is still live and when it was
        submitted (what :func:`~streamops.verdict.health_verdict` needs to tell the old
        version handing over from a failed start). Asks the master a second time only then."""
        view = self.view(name)
        if not since_driver or view.driver_id in (None, since_driver):
            return Observation(view, since_driver)
        try:
            live: bool | None = self.driver_live(since_driver)
        except StreamopsError:  # answered the view a moment ago: try again at the next poll
            live = None
        return Observation(view, since_driver, live, self.submitted_at(name, since_driver))

    def submitted_at(self, name: str, driver_id: str) -> float | None:
        """When ``driver_id`` was submitted as ``name``, from its submissions (None: never)."""
        return next(
            (
                float(s["at"])
                for s in read_submissions(self.layout.submissions_file(name))
                if s.get("event") == "submitted" and s.get("driver_id") == driver_id
                and s.get("at") is not None
            ),
            None,
        )  # fmt: skip

    def wait_healthy(
        self, name: str, *, timeout: float, since_driver: str | None = None
    ) -> JobView:
        """Block until ``name`` is healthy (on ``since_driver`` if given) or fail clearly;
        :func:`~streamops.verdict.health_verdict` judges, as for the Airflow waits."""
        deadline = time.monotonic() + timeout
        next_log = 0.0
        while True:
            seen = self.observe(name, since_driver)
            verdict = health_verdict(seen)
            if verdict.outcome is Outcome.HEALTHY:
                log.info("%s", verdict.message)
                return seen.view
            if verdict.outcome is Outcome.FAILED:
                raise JobError(self.failure_message(verdict.message, seen.view, since_driver))
            if time.monotonic() >= deadline:
                raise JobError(
                    f"{timed_out(name, timeout, seen.view)}. "
                    f"{self.failure_detail(seen.view, since_driver)}"
                )
            if time.monotonic() >= next_log:
                log.info("%s", verdict.message)
                next_log = time.monotonic() + 10
            time.sleep(1.0)

    def failure_message(self, message: str, view: JobView, driver_id: str | None = None) -> str:
        """A failed wait's ``message`` and :meth:`failure_detail`, unless that detail is the
        job's recorded error and the message quotes it already."""
        error = view.status.error_of(driver_id or view.driver_id)
        if error and error[:ERROR_CHARS] in message:
            return message
        return f"{message}. {self.failure_detail(view, driver_id)}"

    def failure_detail(self, view: JobView, driver_id: str | None = None) -> str:
        """The job's recorded error, or the tail of the driver's stderr on its worker."""
        error = view.status.error_of(driver_id or view.driver_id)
        if error:
            return f"Job error: {error[:ERROR_CHARS]}"
        for path in sorted(self.layout.cluster_dir.glob(f"work/*/{driver_id or '-'}/stderr")):
            lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
            errors = [ln for ln in lines if "Error" in ln or "Exception" in ln][-5:]
            return f"Driver log {path}: " + " | ".join(errors or lines[-5:])
        return "No driver log found."

    def drivers(self, name: str, master: dict[str, Any] | None = None) -> list[DriverInfo]:
        """Every live driver of ``name`` the master knows (``streamops.job_drivers``)."""
        master = self.client.state() if master is None else master
        active = [DriverInfo.from_json(d) for d in master.get("activedrivers") or []]
        submitted = read_submissions(self.layout.submissions_file(name))
        return drivers_of(self.layout, name, active, submitted)

    def cancel(self, name: str, *, timeout: float = 60.0) -> list[str]:
        """Kill every live driver of ``name`` (no relaunch): its standbys, relaunches and
        orphans first, its running driver last, and wait until none is left; the drivers
        killed, in that order. The job's lease is then given up."""
        master = self.client.state()
        view, ours = self.view_in(name, master), self.drivers(name, master)
        identify_by = time.monotonic() + timeout
        while not ours and view.is_live and time.monotonic() < identify_by:
            log.info("job %s is relaunching; waiting for its driver to identify itself", name)
            time.sleep(2.0)
            master = self.client.state()
            view, ours = self.view_in(name, master), self.drivers(name, master)
        if not ours:
            if not view.is_live:
                raise JobNotFound(f"job {name} is not running (state {view.state})")
            raise JobError(
                f"job {name} has a live application but its driver did not identify itself "
                f"within {timeout:.0f}s; kill it from the master UI"
            )
        ids = {d.id for d in ours}
        primary = view.driver_id if view.driver_id in ids else None
        # first: a standby would take the job over when its driver dies
        order = sorted(ids - {primary}) + ([primary] if primary else [])
        for driver_id in order:
            role = "its running driver" if driver_id == primary else "driver"
            log.info("cancelling job %s: killing %s %s", name, role, driver_id)
            self.kill_driver(name, driver_id)
        self._wait_gone(name, set(order), timeout, app=True)
        lease.give_up(self.layout, name, unless_live=False)
        log.info("job %s cancelled (killed %s)", name, ", ".join(order))
        return order

    def clear_orphans(self, name: str, *, keep: frozenset[str] | set[str] = frozenset(),
                      timeout: float = 60.0) -> list[str]:  # fmt: skip
        """Kill the drivers of ``name`` that are neither its live running driver nor that
        driver's standbys (nor ``keep``, nor an upgrade's warm standby) and wait until they
        are gone; those killed. With no driver of the job left live, a lease whose holder
        is dead is given up (``lease.give_up``)."""
        master = self.client.state()
        view, ours = self.view_in(name, master), self.drivers(name, master)
        submitted = read_submissions(self.layout.submissions_file(name))
        kept = set(keep) | warm_standbys(submitted)
        if view.is_live and view.driver_id:
            active = [DriverInfo.from_json(d) for d in master.get("activedrivers") or []]
            kept |= {view.driver_id} | self.standby_drivers(name, submitted, active)
        orphans = sorted(d.id for d in ours if d.id not in kept)
        for driver_id in orphans:
            log.warning("job %s: killing orphan driver %s (not the job's running driver nor "
                        "its standby)", name, driver_id)  # fmt: skip
            self.kill_driver(name, driver_id)
        if orphans:
            self._wait_gone(name, set(orphans), timeout)
        if not any(d.id in kept for d in ours) and not view.is_live:
            lease.give_up(self.layout, name, unless_live=not orphans)
        return orphans

    def _wait_gone(self, name: str, ids: set[str], timeout: float, app: bool = False) -> None:
        """Until none of ``ids`` is live (and, with ``app``, no application of ``name``)."""
        deadline = time.monotonic() + timeout
        while True:
            master = self.client.state()
            left = {d.id for d in self.drivers(name, master)} & ids
            if not left and not (app and self.view_in(name, master).is_live):
                return
            if time.monotonic() > deadline:
                raise JobError(f"job {name} still live {timeout:.0f}s after its drivers were "
                               f"killed (left: {', '.join(sorted(left)) or 'its application'})")
            time.sleep(0.5)

    def kill_driver(self, name: str, driver_id: str) -> None:
        """Kill one driver of ``name`` (no relaunch) and record it in its submissions."""
        self.client.kill_submission(driver_id)
        append_record(self.layout.submissions_file(name), Cancellation(driver_id))


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


def _not_running(status: JobStatus, held: Any) -> str:
    """The state of a job whose lease no driver keeps fresh: its last status, and the lease's."""
    last = status.state
    lease = f"lease of {held.holder} expired" if held is not None else "no lease"
    return f"NOT RUNNING ({lease}{f', last {last}' if last else ''})"
