"""Taking a savepoint of a running job, and with ``cancel`` stopping it once it is taken.

A savepoint (with cancel) is one procedure of three resumable steps over a typed intent,
:class:`SavepointCancel`, that its owner saves after every step (``save``): the restart from
a fresh savepoint (:mod:`streamops.procedures.savepoint_restart`: the manual restart, the
rebalance, the
cluster restart) and the upgrade (:mod:`streamops.procedures.upgrade_steps`) keep it in their own
intent; ``streamops save-snapshot`` keeps it in memory (:func:`savepoint_job`)::

    request    the request id is recorded, then sent: the driver drains its stages to a
               batch boundary and copies their checkpoints (a retry sends the recorded
               request if it was never written, waits for it if it stands, and sends a new
               one only if it failed)
    answered   the driver's answer: the savepoint is published, and with ``cancel`` the
               queries are stopped and the lease given up (a poll, or a wait)
    stopped    with ``cancel``: the driver's process has ended (a poll, or a wait)

A driver that goes away during the savepoint ends the wait with what was kept (a savepoint is
published whole or not at all). Starting a version from a savepoint is
:mod:`streamops.world.restore`; the savepoint files themselves are
:mod:`streamops.state.savepoints`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from streamops.exceptions import ClusterNotRunning, JobError, JobNotFound
from streamops.procedures.intent_store import StepLog, from_dict
from streamops.procedures.job_lease import job_operation
from streamops.procedures.step_runner import run_steps
from streamops.state.layout import StateLayout
from streamops.timeouts import REQUEST_TIMEOUT, STOP_TIMEOUT
from streamops.world.operations import Operations, Registry, World
from streamops.world.port import operations
from streamops_contract.state import control

log = logging.getLogger("streamops.procedures.savepoint_taking")

@dataclass
class SavepointCancel(StepLog):
    """A savepoint (with ``cancel``: and the stop) of one job; saved by its owner after
    every step, so a retried step resumes from it."""

    job: str
    savepoint: str
    cancel: bool = True
    handover: bool = False  # with cancel: the driver idles until the next version runs
    driver: str | None = None  # the driver asked (its stop is waited for)
    app_id: str | None = None  # its application: a relaunch under the same id is another run
    request: str | None = None  # the request's id, recorded before it is sent
    answer: dict[str, Any] = field(default_factory=dict)  # the answer's detail

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SavepointCancel:
        return from_dict(cls, data)

    def pending(self, step: str, *, after: str) -> bool:
        """Whether ``step`` is still to do; raises if the step before it is not done."""
        if step in self.done:
            return False
        if after not in self.done:
            raise JobError(f"job {self.job}: savepoint {self.savepoint}: {step} before {after}")
        return True


Save = Callable[[SavepointCancel, str], None]
"""How the owner keeps the intent: ``save(intent, phase)``, after every change."""


def alive(registry: Registry, sp: SavepointCancel) -> bool:
    """Whether the driver asked still runs: the same application when it was recorded (a
    driver relaunched by its worker keeps its id), else that driver (an upgrade: a warm
    standby of the next version is live under the job's name too), else any driver."""
    if sp.app_id:
        view = registry.view(sp.job)
        return view.is_live and view.status.app_id == sp.app_id
    if sp.driver:
        return registry.driver_live(sp.driver)
    return registry.view(sp.job).is_live


def request(
    ops: Operations, sp: SavepointCancel, save: Save, *, timeout: float = REQUEST_TIMEOUT
) -> SavepointCancel:
    """Ask the job's driver for the savepoint. A recorded request that was never written is
    sent now under its id; one that is pending or answered ok is waited for (never a second
    cancel); one that failed is replaced by a new one."""
    layout = ops.layout
    if sp.request and request_stands(layout, sp.job, sp.request):
        if control.read_request(layout, sp.job, sp.request) is not None:
            if "request" not in sp.done:
                sp.mark("request")
                save(sp, "savepoint-requested")
            return sp
        log.info("job %s: savepoint request %s was recorded but not sent; sending it", sp.job,
                 sp.request)  # fmt: skip
    else:
        view = ops.registry.view(sp.job)
        if sp.driver is None and view.is_live:
            sp.driver, sp.app_id = view.driver_id, view.status.app_id
        sp.request, sp.answer = control.new_request_id("savepoint"), {}
        sp.done = []
        save(sp, "savepoint-with-cancel" if sp.cancel else "savepoint")
    ops.savepoints.request(sp.job, sp.savepoint, cancel=sp.cancel, handover=sp.handover,
                           timeout=timeout, request_id=sp.request)  # fmt: skip
    sp.mark("request")
    save(sp, "savepoint-requested")
    return sp


def answered(ops: Operations, sp: SavepointCancel, save: Save, *, timeout: float = 0.0) -> bool:
    """Whether the driver answered: the savepoint is published (with ``cancel``: the queries
    are stopped, the lease given up). ``timeout`` 0: one look (a sensor's poke); else wait
    for the answer (every 50 ms) until the request expires. Raises on a failed answer, or a
    driver that went away without one (the request is then withdrawn)."""
    if not sp.pending("answered", after="request"):
        return True
    layout, registry = ops.layout, ops.registry
    sent = control.read_request(layout, sp.job, str(sp.request))
    if timeout and sent is not None:
        try:
            control.wait_result(layout, sp.job, sent, still_alive=lambda: alive(registry, sp))
        except (control.DriverGone, ClusterNotRunning, control.ControlTimeout) as exc:
            # withdrawn, or the driver claimed it first: it was publishing as it went away
            if control.withdraw(layout, sp.job, sent, str(exc)) \
                    or control.await_claimed(layout, sp.job, sent) is None:
                if isinstance(exc, control.ControlTimeout):
                    raise
                raise control.DriverGone(
                    _no_savepoint(ops, sp.job, sp.savepoint, exc, sp.driver)
                ) from exc
    result = savepoint_answer(layout, sp.job, str(sp.request), live=alive(registry, sp))
    if result is None:
        return False
    log.info("job %s: savepoint %s taken in %ss (batches %s)", sp.job, sp.savepoint,
             result.detail.get("duration_s"), result.detail.get("batches"))  # fmt: skip
    sp.answer = dict(result.detail)
    sp.mark("answered")
    save(sp, "savepoint-taken")
    return True


def stopped(ops: Operations, sp: SavepointCancel, save: Save, *, timeout: float = 0.0) -> bool:
    """With ``cancel``: whether the driver asked has ended (``timeout`` 0: one look; else wait
    at most ``timeout``, then raise); after a handover it ends once the next version runs.
    Without ``cancel`` nothing stops: done at once."""
    if not sp.pending("stopped", after="answered"):
        return True
    if sp.cancel:
        if timeout:
            ops.registry.wait_driver_ended(sp.job, sp.driver, timeout)
        elif alive(ops.registry, sp):
            log.info("savepoint of %s is verified; waiting for the job to stop", sp.job)
            return False
        log.info("job %s stopped after savepoint %s", sp.job, sp.savepoint)
    sp.mark("stopped")
    save(sp, "job-stopped")
    return True


STEPS = (request, answered, stopped)


def savepoint_job(
    world: World, job: str, name: str, *, cancel: bool = False,
    timeout: float = REQUEST_TIMEOUT, wait_stopped: bool = True, handover: bool = False,
) -> control.ControlResult:  # fmt: skip
    """Take savepoint ``name`` of the running ``job``; with ``cancel``, stop it afterwards.

    With ``cancel`` the driver has stopped its queries and given up its lease when this
    returns; ``wait_stopped`` also waits for its process to end. ``handover`` (with
    ``cancel``, an upgrade): the driver is told a new version takes over, and it shuts down
    only once that version runs. The intent is kept in memory (a re-run takes another).
    """
    ops = operations(world)
    with job_operation(ops, job, "savepoint with cancel" if cancel else "savepoint"):
        return _savepoint_job(ops, job, name, cancel=cancel, timeout=timeout,
                              wait_stopped=wait_stopped, handover=handover)  # fmt: skip


def _savepoint_job(ops: Operations, job: str, name: str, *, cancel: bool, timeout: float,
                   wait_stopped: bool, handover: bool) -> control.ControlResult:  # fmt: skip
    view = ops.registry.view(job)
    if not view.is_live:
        raise JobNotFound(f"job {job} is not running (state {view.state}); nothing to savepoint")
    sp = SavepointCancel(job, name, cancel=cancel, handover=handover, driver=view.driver_id,
                         app_id=view.status.app_id)  # fmt: skip
    keep: Save = lambda *_: None  # noqa: E731
    steps = STEPS if wait_stopped else STEPS[:2]
    run_steps(steps, ops, sp, keep, waits={"request": timeout, "answered": timeout,
                                           "stopped": STOP_TIMEOUT})  # fmt: skip
    result = control.read_result(ops.layout, job, str(sp.request))
    assert result is not None  # answered
    return result


def request_stands(layout: StateLayout, job: str, request_id: str) -> bool:
    """Whether request ``request_id`` is pending or answered ok (a retried step waits for it
    instead of sending a second one; a failed one is sent again)."""
    result = control.read_result(layout, job, request_id)
    return result is None or result.ok


def savepoint_answer(
    layout: StateLayout, job: str, request_id: str, *, live: bool
) -> control.ControlResult | None:
    """One look at the answer to savepoint request ``request_id``: the answer once it is in,
    else ``None``. ``live``: whether the driver asked still runs. Raises on a failed answer
    or a driver that went away without one."""
    result = control.read_result(layout, job, request_id)
    if result is None:
        if not live:
            request = control.read_request(layout, job, request_id)
            age = control.claim_age(layout, job, request_id)
            if request is not None and age is not None and age <= control.CLAIM_GRACE_S \
                    and control.read_result(layout, job, request_id) is None:
                return None  # claimed by its driver as it went away: its answer follows
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
    log.info("job %s: %s %s", job, result.message, result.detail)
    return result


def _no_savepoint(
    world: World, job: str, name: str, cause: Exception, driver: str | None = None
) -> str:
    """What happened to a savepoint whose driver went away, what was kept, and what now."""
    ops = operations(world)
    published = ops.layout.savepoint(name).is_dir()  # published whole or not at all
    kept = f"savepoint {name} was published before" if published else "nothing was kept"
    if isinstance(cause, ClusterNotRunning):
        return (
            f"job {job}: the master stopped answering during savepoint {name} ({cause}); "
            f"{kept}; whether the driver runs on is unknown (streamops health tells)"
        )
    try:
        now = ops.registry.view(job)
    except ClusterNotRunning:
        now = None
    if now is not None and driver and now.status.took_over_from == driver:
        after = f"its hot standby {now.driver_id} took the job over from its checkpoint"
    elif now is not None and now.is_live:
        after = "the job is being relaunched from its checkpoint"
    else:
        after = f"the job is not running (state {now.state if now else 'unknown'})"
    return f"job {job}: the driver died during savepoint {name}; {kept}; {after}"
