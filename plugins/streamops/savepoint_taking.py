"""Taking a savepoint of a running job, and with ``cancel`` stopping it once it is taken.

``savepoint_job`` asks the driver (control protocol) to drain its stages to a batch boundary
and copy their checkpoints; with ``cancel`` the job stops only after the copy is verified,
and ``wait_driver_ended`` waits for its process to end. A driver that goes away during the
savepoint ends the wait with what was kept (a savepoint is published whole or not at all).
Starting a version from a savepoint is :mod:`streamops.restore`; the savepoint files
themselves are :mod:`streamops.savepoints`.
"""

from __future__ import annotations

import logging
import time

from streamops import control, savepoints
from streamops.exceptions import ClusterNotRunning, JobError, JobNotFound, SavepointNotFound
from streamops.jobs import JobRegistry
from streamops.layout import StateLayout
from streamops.settings import Settings

log = logging.getLogger("streamops.savepoint_taking")


def savepoint_job(
    settings: Settings, job: str, name: str, *, cancel: bool = False, timeout: float = 180.0,
    wait_stopped: bool = True, handover: bool = False,
) -> control.ControlResult:  # fmt: skip
    """Take savepoint ``name`` of the running ``job``; with ``cancel``, stop it afterwards.

    With ``cancel`` the driver has stopped its queries and given up its lease when this
    returns; ``wait_stopped`` also waits for its process to end. ``handover`` (with
    ``cancel``, an upgrade): the driver is told a new version takes over, and it shuts down
    only once that version runs.
    """
    registry = JobRegistry(settings)
    view = registry.view(job)
    if not view.is_live:
        raise JobNotFound(f"job {job} is not running (state {view.state}); nothing to savepoint")
    request = control.send_request(
        settings.layout, job, "savepoint", name=name, cancel=cancel, timeout=timeout,
        handover=handover,
    )  # fmt: skip

    def same_driver() -> bool:  # a relaunched driver is another run: its answer never comes
        now = registry.view(job)
        return now.is_live and now.status.get("app_id") == view.status.get("app_id")

    try:
        result = control.wait_result(settings.layout, job, request, still_alive=same_driver)
    except (control.DriverGone, ClusterNotRunning, control.ControlTimeout) as exc:
        control.withdraw(settings.layout, job, request, str(exc))
        if isinstance(exc, control.ControlTimeout):
            raise
        raise control.DriverGone(_no_savepoint(settings, job, name, exc, view.driver_id)) from exc
    log.info("job %s: savepoint %s taken in %ss (batches %s)", job, name,
             result.detail.get("duration_s"), result.detail.get("batches"))  # fmt: skip
    if cancel and wait_stopped:
        wait_driver_ended(settings, job, view.driver_id)
        log.info("job %s stopped after savepoint %s", job, name)
    return result


def request_savepoint(
    settings: Settings, job: str, name: str, *, cancel: bool, handover: bool = False,
    timeout: float = 180.0,
) -> str:  # fmt: skip
    """Ask the running ``job``'s driver for savepoint ``name`` (answered at its next batch
    boundary; wait with :func:`savepoint_answer`); the request id. Refused when the job is not
    running or the savepoint exists already."""
    view = JobRegistry(settings).view(job)
    if not view.is_live:
        raise JobNotFound(f"job {job} is not running (state {view.state}); nothing to savepoint")
    try:
        savepoints.get_savepoint(settings.layout, name)
    except SavepointNotFound:
        pass
    else:
        raise JobError(f"savepoint {name} exists already; pick another name")
    request = control.send_request(settings.layout, job, "savepoint", name=name, cancel=cancel,
                                   timeout=timeout, handover=handover)  # fmt: skip
    return request.id


def request_stands(layout: StateLayout, job: str, request_id: str) -> bool:
    """Whether request ``request_id`` is pending or answered ok (a retried step waits for it
    instead of sending a second one; a failed one is sent again)."""
    result = control.read_result(layout, job, request_id)
    return result is None or result.ok


def savepoint_answer(
    layout: StateLayout, registry: JobRegistry, job: str, request_id: str, *, cancel: bool,
    driver: str | None = None,
) -> control.ControlResult | None:  # fmt: skip
    """One look at the answer to savepoint request ``request_id``: the answer once it is in
    (with ``cancel``: and the driver stopped, unless it answered that it hands over: it then
    idles, lease given up, until the next version runs), else ``None``. ``driver``: the
    driver asked (an upgrade: a warm standby of the next version is live under the job's
    name too). Raises on a failed answer or a driver that went away without one."""
    result = control.read_result(layout, job, request_id)
    live = registry.driver_live(driver) if driver else registry.view(job).is_live
    if result is None:
        if not live:
            request = control.read_request(layout, job, request_id)
            if request is not None:  # no later driver of the job may act on it
                control.withdraw(layout, job, request, "the driver went away")
            raise control.DriverGone(
                f"job {job}: the driver went away before answering savepoint request "
                f"{request_id}; restart it from its last checkpoint (restart_job DAG, mode "
                "last-checkpoint)"
            )
        log.info("waiting for job %s to answer savepoint request %s (next batch boundary)",
                 job, request_id)  # fmt: skip
        return None
    if not result.ok:
        raise control.ControlFailed(
            f"job {job}: savepoint request {request_id} failed: {result.message}"
        )
    if cancel and live and not result.detail.get("handover"):
        log.info("savepoint of %s is verified; waiting for the job to stop", job)
        return None
    log.info("job %s: %s %s", job, result.message, result.detail)
    return result


def _no_savepoint(
    settings: Settings, job: str, name: str, cause: Exception, driver: str | None = None
) -> str:
    """What happened to a savepoint whose driver went away, what was kept, and what now."""
    published = settings.layout.savepoint(name).is_dir()  # published whole or not at all
    kept = f"savepoint {name} was published before" if published else "nothing was kept"
    if isinstance(cause, ClusterNotRunning):
        return (
            f"job {job}: the master stopped answering during savepoint {name} ({cause}); "
            f"{kept}; whether the driver runs on is unknown (streamops health tells)"
        )
    try:
        now = JobRegistry(settings).view(job)
    except ClusterNotRunning:
        now = None
    if now is not None and driver and now.status.get("took_over_from") == driver:
        after = f"its hot standby {now.driver_id} took the job over from its checkpoint"
    elif now is not None and now.is_live:
        after = "the job is being relaunched from its checkpoint"
    else:
        after = f"the job is not running (state {now.state if now else 'unknown'})"
    return f"job {job}: the driver died during savepoint {name}; {kept}; {after}"


def wait_driver_ended(
    settings: Settings, job: str, driver_id: str | None, timeout: float = 60.0
) -> None:
    """Wait until ``driver_id`` (else any driver of ``job``) is no longer live on the master;
    a warm standby of the job may be live beside it."""
    registry = JobRegistry(settings)
    deadline = time.monotonic() + timeout
    while registry.driver_live(driver_id) if driver_id else registry.view(job).is_live:
        if time.monotonic() > deadline:
            raise JobError(f"job {job}: driver {driver_id} still running {timeout:.0f}s after "
                           "it was told to stop")  # fmt: skip
        time.sleep(0.2)
