"""Restart from a fresh savepoint, as resumable steps over a typed intent, like
:mod:`streamops.procedures.upgrade_steps`: the same version, stopped by a savepoint with cancel and
started again from it. The manual restart (:func:`streamops.procedures.restart.restart_job`, mode
``savepoint``), the rebalance (:func:`streamops.procedures.scale.rebalance`) and the cluster restart
(:mod:`streamops.procedures.cluster_restart`, which stops and starts the cluster between the
savepoint and the start) run these steps; each task of the ``restart_job`` DAG runs (or polls) one.
Every step takes ``(ops, job, owner)`` (``ops``: the operations port); only the ``owner``
(``cli``, the DAG run, the cluster restart) resumes it::

    begin                 record the intent: the job's last spec by value, the savepoint name
    request_savepoint     the savepoint with cancel is requested   (:mod:`savepoint_taking`)
    savepoint_answered    the savepoint is published, the queries stopped (a poll)
    job_stopped           the driver has ended (a poll)
    start_from_savepoint  the same spec is submitted from the savepoint
    verify                the new driver is healthy (the one verdict) → done

The intent is ``jobs/<job>/restart.json`` (:class:`JobRestart`, kept by the intent store of
:mod:`streamops.procedures.intent_store`; the restart from the last checkpoint of
:mod:`streamops.procedures.restart` keeps the same schema there, ``mode`` telling them apart),
saved before each destructive step and after it, so a retried step resumes: the savepoint is
requested once (no second cancel), the driver is submitted once (no second submit:
``already_started`` finds a submission a crash did not record).
"""

from __future__ import annotations

import logging
import re
import time
from dataclasses import dataclass
from typing import Any

from streamops.exceptions import RestartFailed
from streamops.procedures import savepoint_taking
from streamops.procedures.intent_store import IntentStore, StepRecord
from streamops.procedures.intents import already_started
from streamops.procedures.savepoint_taking import SavepointCancel
from streamops.spec import JobSpec, spec_from_dict
from streamops.timeouts import (
    HEALTH_TIMEOUT,
    REQUEST_TIMEOUT,
    SAVEPOINT_TIMEOUT,
    STOP_TIMEOUT,
)
from streamops.world.operations import Operations, World

log = logging.getLogger("streamops.procedures.restart")

PROCEDURE = "restart"
__all__ = ["JobRestart", "RestartFailed", "SavepointRestart", "begin", "job_stopped",
           "load_intent", "request_savepoint", "restart_savepoint_name", "savepoint_answered",
           "start_from_savepoint", "verify"]  # fmt: skip


def restart_savepoint_name(job: str, purpose: str = "restart") -> str:
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    return re.sub(r"[^a-z0-9._-]", "-", f"{job}-{purpose}-{stamp}".lower())[:63]


@dataclass(kw_only=True)
class JobRestart(StepRecord):
    """What a restart of a job is doing, in either mode; saved after every step."""

    job: str
    owner: str
    purpose: str = "restart"  # restart | rebalance | cluster-restart
    mode: str = "savepoint"  # savepoint | last-checkpoint
    spec: dict[str, Any]  # the job's last spec, by value: the version stopped is restarted
    version: str
    savepoint: str | None = None  # mode savepoint: the savepoint name
    cancel: dict[str, Any] | None = None  # SavepointCancel.to_dict(): its own steps
    watch_driver: bool = True  # verify judges the started driver (else any driver of the job)
    stopped_driver: str | None = None  # mode last-checkpoint: the driver cancelled
    new_driver: str | None = None

    def job_spec(self) -> JobSpec:
        return spec_from_dict(self.spec, f"spec of the restart of {self.job}")

    def savepoint_cancel(self) -> SavepointCancel:
        if self.cancel is None:
            raise RestartFailed(f"the restart of {self.job} takes no savepoint ({self.mode})")
        return SavepointCancel.from_dict(self.cancel)


SavepointRestart = JobRestart  # its name while it held the savepoint mode alone

STORE = IntentStore(
    JobRestart, PROCEDURE, error=RestartFailed, describe=lambda i: (
        f"{i.purpose} of {i.job} from savepoint {i.savepoint}" if i.mode == "savepoint"
        else f"{i.purpose} of {i.job} from its last checkpoint"),
)  # fmt: skip


def load_intent(world: World, job: str) -> JobRestart | None:
    """The job's restart (either mode), if one was recorded."""
    return STORE.load(world, job)


def _cancel_step(ops: Operations, intent: JobRestart, step: str, **kwargs: Any) -> Any:
    """Run step ``step`` of the savepoint with cancel inside this restart's intent."""
    sp = intent.savepoint_cancel()

    def save(value: SavepointCancel, phase: str) -> None:
        intent.cancel = value.to_dict()
        STORE.save(ops, intent, phase)

    outcome = _CANCEL_STEPS[step](ops, sp, save, **kwargs)
    if outcome is not False:
        STORE.done(ops, intent, step, intent.phase)
    return outcome


_CANCEL_STEPS = {"request_savepoint": savepoint_taking.request,
                 "savepoint_answered": savepoint_taking.answered,
                 "job_stopped": savepoint_taking.stopped}  # fmt: skip


def begin(
    ops: Operations, job: str, owner: str, *, savepoint: str | None = None,
    purpose: str = "restart", watch_driver: bool = True,
) -> JobRestart:  # fmt: skip
    """Record the intent of restarting ``job`` from a fresh savepoint; nothing stops. The same
    owner beginning again resumes its unfinished restart (of the same savepoint, or, none
    named, one that has requested its savepoint)."""
    previous = load_intent(ops, job)
    if previous is not None and not previous.finished and previous.owner == owner and (
        previous.mode == "savepoint"
    ) and (savepoint == previous.savepoint or (savepoint is None and len(previous.done) > 1)):
        log.info("resuming the %s of %s at phase %s", previous.purpose, job, previous.phase)
        return previous
    spec = ops.registry.current_spec(job)
    name = savepoint or restart_savepoint_name(job, purpose)
    intent = JobRestart(
        job=job, owner=owner, purpose=purpose, spec=spec.model_dump(mode="json"),
        version=spec.version, savepoint=name,
        cancel=SavepointCancel(job, name, cancel=True).to_dict(), watch_driver=watch_driver,
    )  # fmt: skip
    STORE.done(ops, intent, "begin", "planned")
    return intent


def request_savepoint(
    ops: Operations, job: str, owner: str, *, timeout: float = REQUEST_TIMEOUT
) -> JobRestart:
    """Ask the driver for the savepoint with cancel (once: a retry waits for the recorded
    request, and sends a new one only if that one failed)."""
    intent, todo = STORE.resume(ops, job, owner, "request_savepoint")
    request = intent.savepoint_cancel().request
    if not todo and request and savepoint_taking.request_stands(ops.layout, job, request):
        return intent
    if intent.finished:
        raise RestartFailed(f"the restart of {job} is {intent.phase}; begin another one")
    intent.done = [s for s in intent.done if s == "begin"]  # a failed request: from here again
    _cancel_step(ops, intent, "request_savepoint", timeout=timeout)
    return intent


def savepoint_answered(ops: Operations, job: str, owner: str, *, timeout: float = 0.0) -> bool:
    """Whether the savepoint is published and the queries stopped (``timeout`` 0: one look)."""
    intent, todo = STORE.resume(ops, job, owner, "savepoint_answered")
    return not todo or bool(_cancel_step(ops, intent, "savepoint_answered", timeout=timeout))


def job_stopped(ops: Operations, job: str, owner: str, *, timeout: float = 0.0) -> bool:
    """Whether the stopped driver has ended (``timeout`` 0: one look)."""
    intent, todo = STORE.resume(ops, job, owner, "job_stopped")
    return not todo or bool(_cancel_step(ops, intent, "job_stopped", timeout=timeout))


def start_from_savepoint(ops: Operations, job: str, owner: str) -> JobRestart:
    """Submit the recorded spec from the savepoint, every saved stage restored by name; once:
    a retry returns the driver submitted (recorded, or found by ``already_started``)."""
    intent, todo = STORE.resume(ops, job, owner, "start_from_savepoint")
    if not todo:
        return intent
    if "job_stopped" not in intent.done:
        raise RestartFailed(f"the restart of {job} has not stopped the job yet")
    if intent.phase == "start-from-savepoint":  # a previous attempt crashed in it
        intent.new_driver = already_started(ops, job, since=intent.at)
    if intent.new_driver is None:
        savepoint = str(intent.savepoint)
        stages = list(ops.savepoints.get(savepoint, job).stages)
        _clear_left_drivers(ops, job)
        STORE.save(ops, intent, "start-from-savepoint")
        intent.new_driver = ops.submitter.start_from_savepoint(
            intent.job_spec(), savepoint, stages, wait_healthy=None
        )
    STORE.done(ops, intent, "start_from_savepoint", "started")
    return intent


def _clear_left_drivers(ops: Operations, job: str) -> None:
    """The job was stopped by this restart's savepoint with cancel, so a driver of it the
    master still lists is left over (a relaunch waiting for cores after the master or a node
    came back, a standby that did not stand down): it would refuse the start or hold the
    cores it needs. Killed, and said."""
    if ops.registry.drivers(job):
        killed = ops.registry.cancel(job)
        log.warning("job %s: driver(s) %s were left after the restart stopped it with a "
                    "savepoint; killed before the start from it", job, ", ".join(killed))


def verify(
    ops: Operations, job: str, owner: str, *, timeout: float = HEALTH_TIMEOUT
) -> JobRestart:
    """Wait until the started driver is healthy (:func:`~streamops.verdict.health_verdict`
    judges) → done."""
    intent, todo = STORE.resume(ops, job, owner, "verify")
    if todo:
        since = intent.new_driver if intent.watch_driver else None
        ops.registry.wait_healthy(job, timeout=timeout, since_driver=since)
        STORE.done(ops, intent, "verify", "done")
        log.info("job %s v%s restarted (%s); driver %s", job, intent.version,
                 f"savepoint {intent.savepoint}" if intent.savepoint else "its checkpoints",
                 intent.new_driver)  # fmt: skip
    return intent


def close_if_unchanged(
    ops: Operations, job: str, owner: str, failure: str, steps: tuple[str, ...], stop: str
) -> str | None:  # fmt: skip
    """After a step failed: if the restart had not stopped the job (the savepoint failed, a
    full disk say, and the driver it asked runs on), close its intent as failed and return
    that driver; else ``None`` (the intent stays, to be resumed). ``steps``: the mode's step
    names; ``stop``: the step after which the job is stopped."""
    intent = STORE.load(ops, job)
    if intent is None or intent.finished or intent.owner != owner or stop in intent.done:
        return None
    if intent.mode == "savepoint":
        sp = intent.savepoint_cancel()
        if "answered" in sp.done or not savepoint_taking.alive(ops.registry, sp):
            return None  # a savepoint with cancel answered ok has stopped the queries
        driver = sp.driver or ops.registry.view(job).driver_id
    else:
        view = ops.registry.view(job)
        if intent.phase != "planned" or not view.is_live:  # a cancel may have been sent
            return None
        driver = view.driver_id
    STORE.fail(ops, intent, next(s for s in steps if s not in intent.done), failure)
    return driver or "?"


SAVEPOINT_STEPS = (request_savepoint, savepoint_answered, job_stopped)
"""The savepoint with cancel (:data:`streamops.procedures.savepoint_taking.STEPS`) in this
intent."""
STEPS = (*SAVEPOINT_STEPS, start_from_savepoint, verify)
WAITS = {"savepoint_answered": SAVEPOINT_TIMEOUT, "job_stopped": STOP_TIMEOUT,
         "verify": HEALTH_TIMEOUT}  # fmt: skip
"""How long the loop waits in each polling step (a DAG's sensor pokes it instead)."""
