"""Manual restart of a job, in one of two modes, over one intent (``jobs/<job>/restart.json``,
:class:`~streamops.procedures.savepoint_restart.JobRestart`).

- ``savepoint`` (graceful): the restart from a fresh savepoint of
  :mod:`streamops.procedures.savepoint_restart` (savepoint with cancel → start the same spec from
  it → healthy). Nothing is replayed twice and nothing is skipped: the job resumes at the savepoint.
- ``last-checkpoint`` (for a job too sick to savepoint): :data:`CHECKPOINT_STEPS`, cancel it
  if it still runs (or find it dead) → resubmit the same spec → healthy; its stages resume
  from their own checkpoints, which the sinks tolerate because every write is keyed (replay
  changes nothing).

"The same spec" is the spec of the job's last submission, kept by value in the intent. Each
destructive step first records its intent, so a person, or a retried Airflow task, sees
where the procedure stopped and resumes there. :func:`restart_job` (the CLI's) runs either
mode through the step runner; the ``restart_job`` DAG runs the same steps as tasks.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Literal, get_args

from streamops.exceptions import ConfigError, JobError, StreamopsError
from streamops.procedures import savepoint_restart
from streamops.procedures.backlog_gate import hold_for_backlog
from streamops.procedures.intents import already_started
from streamops.procedures.job_lease import job_operation
from streamops.procedures.savepoint_restart import STORE, JobRestart, restart_savepoint_name
from streamops.procedures.step_runner import run_steps, step_name
from streamops.spec import spec_from_dict
from streamops.timeouts import HEALTH_TIMEOUT
from streamops.world.operations import Operations, World
from streamops.world.port import operations
from streamops.world.submit import clear_orphans

log = logging.getLogger("streamops.procedures.restart")

__all__ = ["CHECKPOINT_STEPS", "MODES", "RestartOutcome", "check_mode", "closed_unchanged",
           "hold_restart", "restart_job", "timed_to_backlog", "restart_savepoint_name", "resubmit",
           "stop_for_restart"]  # fmt: skip

CLI_OWNER = "cli"
RestartMode = Literal["savepoint", "last-checkpoint"]
MODES: tuple[str, ...] = get_args(RestartMode)


def check_mode(mode: str) -> RestartMode:
    if mode not in MODES:
        raise ConfigError(f"restart mode {mode!r} is not one of {', '.join(MODES)}")
    return mode  # type: ignore[return-value]


# --- the steps from the last checkpoint --------------------------------------------------
def _begin_checkpoint(ops: Operations, job: str, owner: str) -> JobRestart:
    """``owner``'s unfinished restart from the last checkpoint, else a new one (the job's
    last spec by value)."""
    previous = STORE.load(ops, job)
    if previous is not None and not previous.finished and previous.owner == owner and (
        previous.mode == "last-checkpoint"
    ):  # fmt: skip
        log.info("resuming the restart of %s from its last checkpoint at phase %s", job,
                 previous.phase)  # fmt: skip
        return previous
    spec = ops.registry.current_spec(job)
    intent = JobRestart(job=job, owner=owner, mode="last-checkpoint",
                        spec=spec.model_dump(mode="json"), version=spec.version)  # fmt: skip
    STORE.done(ops, intent, "begin", "planned")
    return intent


def stop_for_restart(ops: Operations, job: str, owner: str = CLI_OWNER) -> str | None:
    """Record the restart, then cancel ``job`` if it is live (no savepoint: every driver of
    it, standbys and relaunches too); else kill the orphan drivers it left (relaunches
    waiting for a primary that died: they hold cores the new driver needs). The running
    driver killed, ``None`` if the job was dead."""
    intent = _begin_checkpoint(ops, job, owner)
    if "stop" in intent.done:
        return intent.stopped_driver
    view = ops.registry.view(job)
    if not view.is_live:
        log.info("job %s is not running (state %s): nothing to stop", job, view.state)
        clear_orphans(ops.registry, job)  # type: ignore[arg-type]
        STORE.done(ops, intent, "stop", "stopped")
        return None
    intent.stopped_driver = view.driver_id
    STORE.save(ops, intent, "cancel", driver=view.driver_id)
    killed = ops.registry.cancel(job)
    log.info("job %s: killed driver(s) %s", job, ", ".join(killed))
    stopped = view.driver_id if view.driver_id in killed else (killed[-1] if killed else None)
    STORE.done(ops, intent, "stop", "stopped")
    return stopped


def resubmit(ops: Operations, job: str, owner: str = CLI_OWNER) -> str:
    """Submit the recorded spec again (it resumes from its checkpoints); once: a retry by the
    same owner resumes with the driver it already submitted."""
    intent, todo = STORE.resume(ops, job, owner, "resubmit")
    if not todo:
        return str(intent.new_driver)
    if intent.phase == "resubmit":  # a previous attempt crashed in it
        intent.new_driver = already_started(ops, job, since=intent.at)
    if intent.new_driver is None:
        spec = (spec_from_dict(intent.spec, f"spec of the restart of {job}") if intent.spec
                else ops.registry.current_spec(job))  # an intent of the older layout
        STORE.save(ops, intent, "resubmit", version=spec.version)
        intent.new_driver = ops.submitter.submit(spec)
    STORE.done(ops, intent, "resubmit", "started", driver=intent.new_driver)
    return intent.new_driver


CHECKPOINT_STEPS = (stop_for_restart, resubmit, savepoint_restart.verify)
"""The restart from the last checkpoint, after which the job is healthy → done."""


# --- the whole procedure (the CLI's `streamops restart`, the reconcile loop) -------------
@dataclass(frozen=True)
class RestartOutcome:
    job: str
    mode: RestartMode
    version: str
    driver_id: str
    savepoint: str | None
    stop_s: float
    start_s: float


def restart_job(
    world: World, job: str, mode: str, *, savepoint: str | None = None,
    health_timeout: float = HEALTH_TIMEOUT, owner: str = CLI_OWNER, now: bool = False,
) -> RestartOutcome:  # fmt: skip
    """Restart ``job`` in ``mode`` and wait until it is healthy again; a job with a
    ``latency_slo`` first waits for its backlog, or is refused (``now``: at once)."""
    ops, mode = operations(world), check_mode(mode)
    with job_operation(ops, job, f"restart ({mode})"):
        return _restart(ops, job, mode, savepoint, health_timeout, owner, now)


def _steps(mode: RestartMode) -> tuple[tuple[Any, ...], str]:
    """The steps of ``mode``, and the one after which the job is stopped."""
    if mode == "savepoint":
        return savepoint_restart.STEPS, "job_stopped"
    return CHECKPOINT_STEPS, "stop"


def closed_unchanged(ops: Operations, job: str, owner: str, mode: str,
                     exc: StreamopsError) -> JobError | None:  # fmt: skip
    """The failure policy of a restart's step that failed (the CLI's and the ``restart_job``
    DAG's tasks): before the job was stopped (the savepoint failed, a full disk say, and the
    driver runs on) ``owner``'s intent is closed as failed, and the error to raise says the
    job runs on; else ``None`` (the intent stays, to be resumed)."""
    steps, stopped = _steps(check_mode(mode))
    names = tuple(step_name(s) for s in steps)
    running = savepoint_restart.close_if_unchanged(ops, job, owner, str(exc), names, stopped)
    if running is None:
        return None
    return JobError(f"restart of {job} ({mode}) failed: {exc}; nothing was changed: the job "
                    f"still runs (driver {running})")  # fmt: skip


def timed_to_backlog(world: World, job: str) -> bool:
    """Whether a restart of ``job`` is timed to its backlog: its spec (the state root's
    record of its submission) declares ``latency_slo``."""
    try:
        return operations(world).registry.current_spec(job).latency_slo is not None
    except StreamopsError:
        return False


def hold_restart(ops: Operations, job: str, owner: str, *, now: bool) -> None:
    """The backlog gate of a new restart of ``job`` (:mod:`.backlog_gate`): a job with a
    ``latency_slo`` waits for its backlog, or is refused (:class:`JobError`); ``owner``'s
    unfinished restart resumes without it."""
    previous = STORE.load(ops, job)
    if previous is not None and not previous.finished and previous.owner == owner:
        return
    try:
        spec = ops.registry.current_spec(job)
    except StreamopsError:  # no spec recorded: the restart's own steps say so, as before
        return
    hold_for_backlog(ops, job, spec, "restart", now=now, error=JobError)


def _restart(ops: Operations, job: str, mode: RestartMode, savepoint: str | None,
             health_timeout: float, owner: str, now: bool) -> RestartOutcome:  # fmt: skip
    """The restart's steps, its operation lease held."""
    hold_restart(ops, job, owner, now=now)
    if mode == "savepoint":
        savepoint_restart.begin(ops, job, owner, savepoint=savepoint)
    steps, stopped = _steps(mode)

    def kept(exc: StreamopsError) -> None:
        """The failure policy: a step that failed before the job was stopped closes the
        intent as failed (the job runs on); once the job is stopped, say what is kept."""
        closed = closed_unchanged(ops, job, owner, mode, exc)
        if closed is not None:
            raise closed from exc
        now = STORE.load(ops, job)
        if now is None or stopped not in now.done:
            return
        what = f"savepoint {now.savepoint} is kept" if now.savepoint else "its checkpoints are kept"
        raise JobError(f"restart of {job} ({mode}) failed: {exc}; {what}") from exc

    waits = {**savepoint_restart.WAITS, "verify": health_timeout}
    run_steps(steps, ops, job, owner, waits=waits, on_failure=kept)
    intent = STORE.load(ops, job)
    assert intent is not None  # saved by every step
    times = intent.times
    return RestartOutcome(
        job, mode, intent.version, str(intent.new_driver), intent.savepoint,
        round(times[stopped] - times["begin"], 2), round(times["verify"] - times[stopped], 2),
    )  # fmt: skip
