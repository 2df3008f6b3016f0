"""Manual restart of a job, in one of two modes.

- ``savepoint`` (graceful): the restart from a fresh savepoint of
  :mod:`streamops.procedures.savepoint_restart` (savepoint with cancel → start the same spec from
  it → healthy). Nothing is replayed twice and nothing is skipped: the job resumes at the savepoint.
- ``last-checkpoint`` (for a job too sick to savepoint): cancel it if it still runs (or find
  it dead) → resubmit the same spec; its stages resume from their own checkpoints, which the
  sinks tolerate because every write is keyed (replay changes nothing).

"The same spec" is the spec of the job's last submission. Each destructive step first
records its intent in ``jobs/<job>/restart.json``, so a person, or a retried Airflow task,
sees where the procedure stopped and resumes there.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Literal, get_args

from streamops.exceptions import ConfigError, JobError
from streamops.jobs import JobRegistry, current_spec
from streamops.procedures import savepoint_restart
from streamops.procedures.intents import already_started, record_intent
from streamops.procedures.savepoint_restart import restart_savepoint_name
from streamops.procedures.submit import clear_orphans, submit_job
from streamops.settings import Settings

log = logging.getLogger("streamops.procedures.restart")

__all__ = ["MODES", "RestartOutcome", "check_mode", "restart_job", "restart_savepoint_name",
           "resubmit", "stop_for_restart"]  # fmt: skip

CLI_OWNER = "cli"
RestartMode = Literal["savepoint", "last-checkpoint"]
MODES: tuple[str, ...] = get_args(RestartMode)


# --- steps ----------------------------------------------------------------------------
def check_mode(mode: str) -> RestartMode:
    if mode not in MODES:
        raise ConfigError(f"restart mode {mode!r} is not one of {', '.join(MODES)}")
    return mode  # type: ignore[return-value]


def stop_for_restart(settings: Settings, job: str) -> str | None:
    """Cancel ``job`` if it is live (no savepoint: every driver of it, standbys and
    relaunches too); else kill the orphan drivers it left (relaunches waiting for a primary
    that died: they hold cores the new driver needs). The running driver killed, ``None``
    if the job was dead."""
    registry = JobRegistry(settings)
    view = registry.view(job)
    if not view.is_live:
        log.info("job %s is not running (state %s): nothing to stop", job, view.state)
        clear_orphans(registry, job)
        return None
    record_intent(settings, job, "restart", "cancel", mode="last-checkpoint",
                  driver_id=view.driver_id)  # fmt: skip
    killed = registry.cancel(job)
    log.info("job %s: killed driver(s) %s", job, ", ".join(killed))
    return view.driver_id if view.driver_id in killed else (killed[-1] if killed else None)


def resubmit(
    settings: Settings, job: str, *, wait_healthy: float | None = None, owner: str | None = None
) -> str:
    """Submit the job's last spec again; it resumes from its checkpoints.

    ``owner`` names the run of the procedure (e.g. an Airflow DAG run): a retry by the same
    owner resumes with the driver it already submitted.
    """
    spec = current_spec(settings, job)
    done = already_started(settings, job, "restart", "resubmit", owner=owner)
    if done:
        return done
    record_intent(settings, job, "restart", "resubmit", mode="last-checkpoint",
                  version=spec.version, owner=owner)  # fmt: skip
    return submit_job(spec, settings, wait_healthy=wait_healthy)


# --- the whole procedure (the CLI's `streamops restart`) -------------------------------
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
    settings: Settings, job: str, mode: str, *, savepoint: str | None = None,
    health_timeout: float = 300.0,
) -> RestartOutcome:  # fmt: skip
    """Restart ``job`` in ``mode`` and wait until it is healthy again."""
    mode = check_mode(mode)
    if mode == "savepoint":
        return _from_savepoint(settings, job, savepoint, health_timeout)
    version = current_spec(settings, job).version
    t0 = time.monotonic()
    stop_for_restart(settings, job)
    t1 = time.monotonic()
    try:
        driver = resubmit(settings, job, wait_healthy=health_timeout)
    except JobError as exc:
        raise JobError(f"restart of {job} ({mode}) failed: {exc}; its checkpoints are "
                       "kept") from exc  # fmt: skip
    record_intent(settings, job, "restart", "done", mode=mode, savepoint=None, driver_id=driver)
    return RestartOutcome(job, mode, version, driver, None, round(t1 - t0, 2),
                          round(time.monotonic() - t1, 2))  # fmt: skip


def _from_savepoint(
    settings: Settings, job: str, savepoint: str | None, health_timeout: float
) -> RestartOutcome:
    intent = savepoint_restart.begin(settings, job, CLI_OWNER, savepoint=savepoint)
    try:
        intent = savepoint_restart.run_steps(settings, job, CLI_OWNER,
                                             health_timeout=health_timeout)  # fmt: skip
    except JobError as exc:
        now = savepoint_restart.load_intent(settings, job) or intent
        if "job_stopped" not in now.done:
            raise
        raise JobError(f"restart of {job} (savepoint) failed: {exc}; savepoint "
                       f"{now.savepoint} is kept") from exc  # fmt: skip
    times = intent.times
    return RestartOutcome(
        job, "savepoint", intent.version, str(intent.new_driver), intent.savepoint,
        round(times["job_stopped"] - times["begin"], 2),
        round(times["verify"] - times["job_stopped"], 2),
    )  # fmt: skip
