"""The job registry: the commands and waits on a job, from the ops side.

:class:`JobRegistry` cancels a job (every live driver of it, its running driver last), kills
one driver, clears a job's orphans, and waits: for a driver to end, for the job to be
healthy (:meth:`JobRegistry.observe`, one poll of such a wait). Its :meth:`~JobRegistry.view`
and :meth:`~JobRegistry.list` ask the master and build the views on the read side,
:mod:`streamops.job_reads`, where a job's ``JobView`` is built from the state root and the
master's document and the job's records are read. Every job at once, with the master's
document and the fallback when the master does not answer, is
:func:`streamops.world.snapshot.take`.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from streamops.cluster.client import DriverInfo, MasterClient
from streamops.exceptions import JobError, JobNotFound, StreamopsError
from streamops.job_drivers import drivers_of, warm_standbys
from streamops.job_reads import (
    active_drivers,
    current_spec,
    read_submissions,
    standby_drivers,
    submitted_at,
    view_of,
)
from streamops.job_view import LIVE_DRIVER_STATES, JobView
from streamops.settings import Settings
from streamops.spec import JobSpec
from streamops.verdict import ERROR_CHARS, Observation, Outcome, health_verdict, timed_out
from streamops_contract.names import check_name
from streamops_contract.records import Cancellation, append_record
from streamops_contract.state import lease

log = logging.getLogger("streamops.jobs")


class JobRegistry:
    """The commands and waits on the jobs of ``settings``'s state root, through ``client``
    (the master); what the procedures reach as the port's ``registry``."""

    def __init__(self, settings: Settings, client: MasterClient | None = None) -> None:
        self.settings = settings
        self.layout = settings.layout
        self.client = client or MasterClient(settings)

    def names(self) -> list[str]:
        return self.layout.known_jobs()

    def view(self, name: str) -> JobView:
        """The job as the master, asked now, and the state root show it."""
        check_name("job", name)
        return view_of(self.settings, name, self.client.state())

    def list(self) -> list[JobView]:
        """Every job of the state root, the master asked once."""
        master = self.client.state()
        return [view_of(self.settings, n, master) for n in self.names()]

    def current_spec(self, name: str) -> JobSpec:
        """The spec of ``name``'s running driver's submission
        (:func:`streamops.job_reads.current_spec`), as the procedures ask it of the port."""
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
        return Observation(
            view, since_driver, live, submitted_at(self.settings, name, since_driver)
        )

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
        submitted = read_submissions(self.layout.submissions_file(name))
        return drivers_of(self.layout, name, active_drivers(master), submitted)

    def cancel(self, name: str, *, timeout: float = 60.0) -> list[str]:
        """Kill every live driver of ``name`` (no relaunch): its standbys, relaunches and
        orphans first, its running driver last, and wait until none is left; the drivers
        killed, in that order. The job's lease is then given up."""
        master = self.client.state()
        view, ours = view_of(self.settings, name, master), self.drivers(name, master)
        identify_by = time.monotonic() + timeout
        while not ours and view.is_live and time.monotonic() < identify_by:
            log.info("job %s is relaunching; waiting for its driver to identify itself", name)
            time.sleep(2.0)
            master = self.client.state()
            view, ours = view_of(self.settings, name, master), self.drivers(name, master)
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
        view, ours = view_of(self.settings, name, master), self.drivers(name, master)
        submitted = read_submissions(self.layout.submissions_file(name))
        kept = set(keep) | warm_standbys(submitted)
        if view.is_live and view.driver_id:
            active = active_drivers(master)
            kept |= {view.driver_id} | standby_drivers(self.settings, name, submitted, active)
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
            if not left and not (app and view_of(self.settings, name, master).is_live):
                return
            if time.monotonic() > deadline:
                raise JobError(f"job {name} still live {timeout:.0f}s after its drivers were "
                               f"killed (left: {', '.join(sorted(left)) or 'its application'})")
            time.sleep(0.5)

    def kill_driver(self, name: str, driver_id: str) -> None:
        """Kill one driver of ``name`` (no relaunch) and record it in its submissions."""
        self.client.kill_submission(driver_id)
        append_record(self.layout.submissions_file(name), Cancellation(driver_id))

