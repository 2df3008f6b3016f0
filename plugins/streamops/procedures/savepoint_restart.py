"""Restart from a fresh savepoint, as resumable steps over a typed intent, like
:mod:`streamops.procedures.upgrade_steps`: the same version, stopped by a savepoint with cancel and
started again from it. The manual restart (:func:`streamops.procedures.restart.restart_job`, mode
``savepoint``), the rebalance (:func:`streamops.procedures.scale.rebalance`) and the cluster restart
(:mod:`streamops.procedures.cluster_restart`, which stops and starts the cluster between the
savepoint and the start) run these steps; each task of the ``restart_job`` DAG runs (or polls) one.
Every step takes ``(settings, job, owner)``; only the ``owner`` (``cli``, the DAG run, the
cluster restart) resumes it::

    begin                 record the intent: the job's last spec by value, the savepoint name
    request_savepoint     the savepoint with cancel is requested   (:mod:`savepoint_taking`)
    savepoint_answered    the savepoint is published, the queries stopped (a poll)
    job_stopped           the driver has ended (a poll)
    start_from_savepoint  the same spec is submitted from the savepoint
    verify                the new driver is healthy (the one verdict) → done

The intent is ``jobs/<job>/restart.json`` (an intent record of :mod:`streamops.procedures.intents`:
``phase`` and ``at`` on top), saved before each destructive step and after it, so a retried
step resumes: the savepoint is requested once (no second cancel), the driver is submitted
once (no second submit: ``already_started`` finds a submission a crash did not record).
"""

from __future__ import annotations

import logging
import re
import time
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from streamops.exceptions import JobError
from streamops.jobs import JobRegistry, current_spec
from streamops.procedures import restore, savepoint_taking
from streamops.procedures.intents import already_started, read_intent, resume_step
from streamops.procedures.savepoint_taking import SavepointCancel
from streamops.settings import Settings
from streamops.spec import JobSpec, spec_from_dict
from streamops.state.layout import write_json_atomic
from streamops.state.savepoints.catalogue import get_savepoint

log = logging.getLogger("streamops.procedures.restart")

PROCEDURE = "restart"
HEALTH_TIMEOUT = 300.0
SAVEPOINT_TIMEOUT = 240.0  # the wait for the answer (its request expires after 180 s)
STOP_TIMEOUT = savepoint_taking.STOP_TIMEOUT


class RestartFailed(JobError):
    """A restart from a savepoint cannot go on (no intent, another owner's, finished)."""


def restart_savepoint_name(job: str, purpose: str = "restart") -> str:
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    return re.sub(r"[^a-z0-9._-]", "-", f"{job}-{purpose}-{stamp}".lower())[:63]


@dataclass
class SavepointRestart:
    """What a restart from a fresh savepoint is doing; saved after every step."""

    job: str
    owner: str
    purpose: str  # restart | rebalance | cluster-restart
    spec: dict[str, Any]  # the job's last spec, by value: the version stopped is restarted
    version: str
    savepoint: str
    cancel: dict[str, Any]  # SavepointCancel.to_dict(): the savepoint with cancel's own steps
    watch_driver: bool = True  # verify judges the started driver (else any driver of the job)
    mode: str = "savepoint"
    new_driver: str | None = None
    phase: str = "planned"
    done: list[str] = field(default_factory=list)
    at: float = field(default_factory=time.time)
    times: dict[str, float] = field(default_factory=dict)

    @property
    def finished(self) -> bool:
        return self.phase == "done"

    def job_spec(self) -> JobSpec:
        return spec_from_dict(self.spec, f"spec of the restart of {self.job}")

    def savepoint_cancel(self) -> SavepointCancel:
        return SavepointCancel.from_dict(self.cancel)


def load_intent(settings: Settings, job: str) -> SavepointRestart | None:
    """The job's restart from a savepoint; ``None`` if the last restart record is another
    kind (e.g. a restart from the last checkpoint)."""
    data = read_intent(settings, job, PROCEDURE)
    names = {f.name for f in fields(SavepointRestart)}
    if "cancel" not in data or "spec" not in data:
        return None
    return SavepointRestart(**{k: data[k] for k in names if k in data})


def _save(settings: Settings, intent: SavepointRestart, phase: str) -> None:
    intent.phase, intent.at = phase, time.time()
    write_json_atomic(settings.layout.intent_record(intent.job, PROCEDURE), asdict(intent))
    log.info("%s of %s from savepoint %s: %s", intent.purpose, intent.job, intent.savepoint,
             phase)  # fmt: skip


def _todo(settings: Settings, job: str, owner: str, step: str) -> tuple[SavepointRestart, bool]:
    """The restart in progress of ``owner``, and whether ``step`` is still to do."""
    return resume_step(load_intent(settings, job), job, owner, step, procedure="restart",
                       first="begin", error=RestartFailed)  # fmt: skip


def _done(settings: Settings, intent: SavepointRestart, step: str, phase: str) -> None:
    if step not in intent.done:
        intent.done.append(step)
    intent.times[step] = time.time()
    _save(settings, intent, phase)


def _cancel_step(
    settings: Settings, intent: SavepointRestart, step: str, **kwargs: Any
) -> Any:
    """Run step ``step`` of the savepoint with cancel inside this restart's intent."""
    sp = intent.savepoint_cancel()

    def save(value: SavepointCancel, phase: str) -> None:
        intent.cancel = value.to_dict()
        _save(settings, intent, phase)

    outcome = getattr(savepoint_taking, _CANCEL_STEPS[step])(settings, sp, save, **kwargs)
    if outcome is not False:
        _done(settings, intent, step, intent.phase)
    return outcome


_CANCEL_STEPS = {"request_savepoint": "request", "savepoint_answered": "answered",
                 "job_stopped": "stopped"}  # fmt: skip


def begin(
    settings: Settings, job: str, owner: str, *, savepoint: str | None = None,
    purpose: str = "restart", watch_driver: bool = True,
) -> SavepointRestart:  # fmt: skip
    """Record the intent of restarting ``job`` from a fresh savepoint; nothing stops. The same
    owner beginning again resumes its unfinished restart (of the same savepoint, or, none
    named, one that has requested its savepoint)."""
    previous = load_intent(settings, job)
    if previous is not None and not previous.finished and previous.owner == owner and (
        savepoint == previous.savepoint or (savepoint is None and len(previous.done) > 1)
    ):
        log.info("resuming the %s of %s at phase %s", previous.purpose, job, previous.phase)
        return previous
    spec = current_spec(settings, job)
    name = savepoint or restart_savepoint_name(job, purpose)
    intent = SavepointRestart(
        job=job, owner=owner, purpose=purpose, spec=spec.model_dump(mode="json"),
        version=spec.version, savepoint=name,
        cancel=SavepointCancel(job, name, cancel=True).to_dict(), watch_driver=watch_driver,
    )  # fmt: skip
    _done(settings, intent, "begin", "planned")
    return intent


def request_savepoint(
    settings: Settings, job: str, owner: str, *, timeout: float = savepoint_taking.REQUEST_TIMEOUT
) -> SavepointRestart:
    """Ask the driver for the savepoint with cancel (once: a retry waits for the recorded
    request, and sends a new one only if that one failed)."""
    intent, todo = _todo(settings, job, owner, "request_savepoint")
    request = intent.savepoint_cancel().request
    if not todo and request and savepoint_taking.request_stands(settings.layout, job, request):
        return intent
    if intent.finished:
        raise RestartFailed(f"the restart of {job} is {intent.phase}; begin another one")
    intent.done = [s for s in intent.done if s == "begin"]  # a failed request: from here again
    _cancel_step(settings, intent, "request_savepoint", timeout=timeout)
    return intent


def savepoint_answered(settings: Settings, job: str, owner: str, *, timeout: float = 0.0) -> bool:
    """Whether the savepoint is published and the queries stopped (``timeout`` 0: one look)."""
    intent, todo = _todo(settings, job, owner, "savepoint_answered")
    return not todo or bool(_cancel_step(settings, intent, "savepoint_answered", timeout=timeout))


def job_stopped(settings: Settings, job: str, owner: str, *, timeout: float = 0.0) -> bool:
    """Whether the stopped driver has ended (``timeout`` 0: one look)."""
    intent, todo = _todo(settings, job, owner, "job_stopped")
    return not todo or bool(_cancel_step(settings, intent, "job_stopped", timeout=timeout))


def start_from_savepoint(settings: Settings, job: str, owner: str) -> SavepointRestart:
    """Submit the recorded spec from the savepoint, every saved stage restored by name; once:
    a retry returns the driver submitted (recorded, or found by ``already_started``)."""
    intent, todo = _todo(settings, job, owner, "start_from_savepoint")
    if not todo:
        return intent
    if "job_stopped" not in intent.done:
        raise RestartFailed(f"the restart of {job} has not stopped the job yet")
    intent.new_driver = already_started(settings, job, PROCEDURE, "start-from-savepoint",
                                        owner=owner)  # fmt: skip
    if intent.new_driver is None:
        stages = list(get_savepoint(settings.layout, intent.savepoint, job=job).stages)
        _clear_left_drivers(settings, job)
        _save(settings, intent, "start-from-savepoint")
        intent.new_driver = restore.start_from_savepoint(
            intent.job_spec(), settings, intent.savepoint, stages, wait_healthy=None
        )
    _done(settings, intent, "start_from_savepoint", "started")
    return intent


def _clear_left_drivers(settings: Settings, job: str) -> None:
    """The job was stopped by this restart's savepoint with cancel, so a driver of it the
    master still lists is left over (a relaunch waiting for cores after the master or a node
    came back, a standby that did not stand down): it would refuse the start or hold the
    cores it needs. Killed, and said."""
    registry = JobRegistry(settings)
    if registry.drivers(job):
        killed = registry.cancel(job)
        log.warning("job %s: driver(s) %s were left after the restart stopped it with a "
                    "savepoint; killed before the start from it", job, ", ".join(killed))


def verify(
    settings: Settings, job: str, owner: str, *, timeout: float = HEALTH_TIMEOUT
) -> SavepointRestart:
    """Wait until the started driver is healthy (:func:`~streamops.verdict.health_verdict`
    judges) → done."""
    intent, todo = _todo(settings, job, owner, "verify")
    if todo:
        since = intent.new_driver if intent.watch_driver else None
        JobRegistry(settings).wait_healthy(job, timeout=timeout, since_driver=since)
        _done(settings, intent, "verify", "done")
        log.info("job %s v%s restarted from savepoint %s; driver %s", job, intent.version,
                 intent.savepoint, intent.new_driver)  # fmt: skip
    return intent


SAVEPOINT_STEPS = (request_savepoint, savepoint_answered, job_stopped)
"""The savepoint with cancel (:data:`streamops.procedures.savepoint_taking.STEPS`) in this
intent."""
STEPS = (*SAVEPOINT_STEPS, start_from_savepoint, verify)
WAITS = {"savepoint_answered": SAVEPOINT_TIMEOUT, "job_stopped": STOP_TIMEOUT}
"""How long the loop waits in each polling step (a DAG's sensor pokes it instead)."""


def run_steps(
    settings: Settings, job: str, owner: str, steps: tuple[Any, ...] = STEPS, *,
    health_timeout: float = HEALTH_TIMEOUT,
) -> SavepointRestart:  # fmt: skip
    """Run ``steps`` in order, waiting in each (the CLI's loop)."""
    waits = {**WAITS, "verify": health_timeout}
    for step in steps:
        name = step.__name__
        step(settings, job, owner, **({"timeout": waits[name]} if name in waits else {}))
    intent = load_intent(settings, job)
    assert intent is not None  # saved by every step
    return intent


def restart(
    settings: Settings, job: str, owner: str, *, savepoint: str | None = None,
    purpose: str = "restart", health_timeout: float = HEALTH_TIMEOUT,
) -> SavepointRestart:  # fmt: skip
    """The whole restart from a fresh savepoint: begin, then every step."""
    begin(settings, job, owner, savepoint=savepoint, purpose=purpose)
    return run_steps(settings, job, owner, health_timeout=health_timeout)
