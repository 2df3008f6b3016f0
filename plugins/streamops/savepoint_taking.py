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

from streamops import control
from streamops.exceptions import ClusterNotRunning, JobError, JobNotFound
from streamops.jobs import JobRegistry
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
