"""The health verdict: is the job we wait for healthy, has its start failed, or not yet?

Every wait on a job's health asks this one question: the CLI's
(``JobRegistry.wait_healthy``: submit, restart, upgrade), the Airflow triggerer's
(``JobHealthyTrigger``) and the sensor's poke (``JobHealthySensor``). The callers observe
(``JobRegistry.observe``: the registry's view, whether the started driver is still live,
when it was submitted); :func:`health_verdict` only judges what it is given and does no I/O,
so one table of cases pins all three down. It lives beside the job's view, below the
registry whose waits use it and below the health checks (:mod:`streamops.health`).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from streamops.job_view import JobView

ERROR_CHARS = 1500


class Outcome(StrEnum):
    HEALTHY = "healthy"
    FAILED = "failed"
    WAITING = "waiting"


@dataclass(frozen=True)
class Observation:
    """What one poll of a health wait saw.

    ``since_driver``: the driver just started, which the job must become healthy on (None:
    any driver will do). ``since_live``: whether the master lists ``since_driver`` as live
    (None: it could not tell); ``since_submitted_at``: when ``since_driver`` was submitted
    (None: not recorded). The last two are needed only when the view shows another driver.
    """

    view: JobView
    since_driver: str | None = None
    since_live: bool | None = False
    since_submitted_at: float | None = None


@dataclass(frozen=True)
class Verdict:
    outcome: Outcome
    message: str

    @property
    def decided(self) -> bool:
        """Healthy or failed: the wait is over."""
        return self.outcome is not Outcome.WAITING


def health_verdict(seen: Observation) -> Verdict:
    """Judge one observation of a job whose health a procedure waits for.

    Without ``since_driver`` the job is healthy when its view is (every stage committed a
    batch or is idle) and failed when its driver ended.

    With ``since_driver`` the job must become healthy on *that* driver. A supervised driver
    that crashes is relaunched by the master under a new id, and the relaunch looks healthy
    within seconds: restored stages with no new data are idle, and idle counts as ready. So
    a driver that died during its start and was relaunched is a **failed start**, never a
    healthy one: the procedure that started it (upgrade, restart, submit) must learn that
    its version or its savepoint does not run, and roll back or stop, instead of trusting a
    job that will crash again at its first batch. The error the dead driver recorded is in
    the message.

    One other driver is not a failure: while ``since_driver`` is still live, a job shown on
    another driver is the old version handing over after an upgrade's savepoint (it idles,
    its sealed status still shown, until the new version runs): keep waiting. Nor is a
    failure recorded by an older driver (its status until the new one writes its own).
    But an older driver still running the job once ``since_driver`` is gone is a failed
    start, and the message says so rather than "relaunched": ``since_driver`` crashed beside
    it, or was fenced off by the lease it holds (a refused driver exits cleanly, writing no
    status).
    """
    view, since = seen.view, seen.since_driver
    status = view.status
    own = since is None or status.driver_id == since
    if view.healthy and own:
        return Verdict(
            Outcome.HEALTHY,
            f"job {view.name} v{view.version} is healthy on driver {view.driver_id}",
        )
    if since and view.is_live and view.state == "RELAUNCHING":
        return _failed(
            f"job {view.name}: driver {since} died during its start and is being relaunched"
            f"{_error_of(view, since)}"
        )
    if since and own and status.state == "FAILED":
        return _failed(
            f"job {view.name} failed on start (driver {since}): "
            f"{(status.error or 'no error recorded')[:ERROR_CHARS]}"
        )
    if since and view.is_live and view.driver_id not in (None, since):
        return _another_driver(seen, since)
    if view.ended:
        return _failed(
            f"job {view.name} did not become healthy: driver "
            f"{since or status.driver_id or '?'} ended {view.driver_state}"
        )
    return Verdict(Outcome.WAITING, f"job {view.name} not healthy yet: {progress(view)}")


def _another_driver(seen: Observation, since: str) -> Verdict:
    """The view shows a live driver other than ``since``: a handover, or a failed start."""
    view = seen.view
    if seen.since_live:
        return Verdict(
            Outcome.WAITING,
            f"job {view.name}: driver {view.driver_id} is handing over to driver {since}, "
            f"which is still starting ({progress(view)})",
        )
    if seen.since_live is None:  # the master did not answer: judge at the next poll
        return Verdict(
            Outcome.WAITING,
            f"job {view.name}: runs on driver {view.driver_id}; cannot tell yet whether "
            f"driver {since} is still live",
        )
    status = view.status
    started = status.started_at if status.driver_id == view.driver_id else None
    if (
        started is not None
        and seen.since_submitted_at is not None
        and started < seen.since_submitted_at
    ):
        return _failed(
            f"job {view.name}: driver {since} is gone while driver {view.driver_id}, started "
            f"before it, still runs the job: its start failed (it crashed, or was fenced off "
            f"because {view.driver_id} holds the job's lease)"
        )
    return _failed(
        f"job {view.name}: driver {since} died during its start and was relaunched "
        f"({view.driver_id}){_error_of(view, since)}"
    )


def _failed(message: str) -> Verdict:
    return Verdict(Outcome.FAILED, message)


def _error_of(view: JobView, driver_id: str) -> str:
    """``": <error>"`` if the status holds the error ``driver_id`` recorded, else ``""``."""
    error = view.status.error_of(driver_id)
    return f": {error[:ERROR_CHARS]}" if error else ""


def stage_batches(view: JobView) -> str:
    """Each stage's last batch id, e.g. ``vehicles=3, vehicle-stats-1m=None``."""
    return ", ".join(f"{n}={s.batch_id}" for n, s in view.stages.items()) or "none"


def progress(view: JobView) -> str:
    """Where a job is on its way to healthy, for the logs of a wait."""
    return f"state {view.state}, driver {view.driver_state}, stages {stage_batches(view)}"


def timed_out(job: str, timeout: float, view: JobView | None) -> str:
    """The message of a wait that ran out of time (``view`` None: the job was never seen)."""
    seen = f"state {view.state}, stages {stage_batches(view)}" if view else "unseen"
    return f"job {job} not healthy after {timeout:.0f}s ({seen})"
