"""Procedures in progress, as the health check sees them: gathered from their intent records,
judged without I/O.

A procedure that stops something records its intent before it acts (an upgrade
``jobs/<job>/upgrade.json``, a restart ``jobs/<job>/restart.json``, a cluster restart
``<state>/cluster/intents/cluster-restart.json``, a scale ``<state>/cluster/intents/scale.json``).
One whose intent is not finished was interrupted (its CLI killed, its DAG run's Airflow gone)
or is running now: either way the jobs it stopped do not run, so health fails, naming the
procedure, its owner, where it is, since when, and what resumes it (a procedure owned by a
DAG run: its tasks to clear; by the CLI: the command whose re-run resumes it).
:func:`gather_procedures` reads them (the only I/O here) into :class:`ProcedureSeen` values;
:func:`procedure_result` judges one.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

from streamops.exceptions import StreamopsError
from streamops.health.report import CheckResult, Level, ProcedureSeen
from streamops.jobs import read_submissions
from streamops.procedures import cluster_restart, restart, savepoint_restart, scale, upgrade_steps
from streamops.procedures.savepoint_restart import JobRestart
from streamops.settings import Settings
from streamops.spec import load_spec

log = logging.getLogger("streamops.health.procedures")
CLOSED_SHOWN_S = 3600.0  # how long a procedure closed as failed is shown (a warning)

def dag_run(owner: str) -> tuple[str, str] | None:
    """``(dag, run)`` of an owner ``airflow:<dag>/<run>``; ``None`` for any other owner."""
    if not owner.startswith("airflow:") or "/" not in owner:
        return None
    dag, _, run = owner.removeprefix("airflow:").partition("/")
    return dag, run


def resume_by_dag(owner: str) -> str | None:
    found = dag_run(owner)
    if found is None:
        return None
    dag, run = found
    return (f"Airflow DAG {dag}, run {run}: clear its unfinished tasks (Clear → failed and "
            "downstream); they resume from the intent")  # fmt: skip


def _when(at: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(at))


def procedure_result(proc: ProcedureSeen, now: float) -> CheckResult:
    """A procedure in progress fails health: what, who, where, since when, how to resume.
    One closed as failed having changed nothing warns: what failed, and that the job runs."""
    group = "cluster" if proc.job is None else "jobs"
    name = f"procedure/{proc.kind}" + (f"/{proc.job}" if proc.job else "")
    if proc.closed:
        failure = (proc.failure or "?").splitlines()[0][:300]
        return CheckResult(group, name, Level.WARN, (
            f"{proc.label} failed at {proc.next_step or proc.phase} ({_when(proc.at)}, "
            f"{max(0.0, now - proc.at):.0f} s ago): {failure}; it changed nothing: the job "
            f"still runs as before; try again: {proc.resume}"))  # fmt: skip
    age = max(0.0, now - proc.since)
    step = f", next step {proc.next_step}" if proc.next_step else ""
    stopped = "; the job is stopped" if proc.stopped else ""
    failed = f"; it failed: {proc.failure.splitlines()[0][:300]}" if proc.failure else ""
    message = (f"{proc.label} has not finished: owner {proc.owner}, phase {proc.phase} "
               f"(since {_when(proc.at)}){step}; begun {_when(proc.since)}, {age:.0f} s ago"
               f"{stopped}{failed}; resume: {proc.resume}")  # fmt: skip
    return CheckResult(group, name, Level.FAIL, message)


# --- gathering (I/O) -------------------------------------------------------------------
def gather_procedures(settings: Settings, jobs: list[str], expected_workers: int) -> list[
    ProcedureSeen
]:  # fmt: skip
    """Every unfinished procedure: the upgrades and restarts of ``jobs``, the cluster restart,
    the scale (an intent record that cannot be read is logged and left out)."""
    out: list[ProcedureSeen] = []
    readers: list[tuple[str, str | None, Any]] = [
        *((kind, job, fn) for job in jobs
          for kind, fn in (("upgrade", _upgrade), ("restart", _restart))),
        ("cluster-restart", None, _cluster_restart),
        ("scale", None, _scale),
    ]  # fmt: skip
    for kind, job, read in readers:
        try:
            found = read(settings, job, expected_workers)
        except (StreamopsError, TypeError, ValueError) as exc:
            log.warning("the %s intent of %s cannot be read: %s", kind, job or "the cluster", exc)
            continue
        if found is not None:
            out.append(found)
    return out


def _upgrade(settings: Settings, job: str, _: int) -> ProcedureSeen | None:
    intent = upgrade_steps.load_intent(settings, job)
    if intent is None or intent.finished:
        return None
    names = [s.__name__ for s in upgrade_steps.STEPS]
    resume = resume_by_dag(intent.owner) or (
        f"`streamops upgrade {job} {_spec_file(settings, intent.new_spec, job, intent.to_version)}`"
        " (the same spec resumes it as owner cli; it rolls back if the job does not become "
        "healthy)"
    )  # fmt: skip
    return ProcedureSeen(
        "upgrade", job, f"upgrade v{intent.from_version} → v{intent.to_version} (savepoint "
        f"{intent.savepoint})", intent.owner, intent.phase,
        next((n for n in names if n not in intent.done), None),
        float(intent.times.get("plan", intent.at)), float(intent.at), resume,
        stopped="request_savepoint" in intent.done or intent.phase == "savepoint-requested",
        failure=intent.reason,
    )  # fmt: skip


def _restart(settings: Settings, job: str, expected_workers: int) -> ProcedureSeen | None:
    intent = savepoint_restart.load_intent(settings, job)
    if intent is None:
        return None
    if intent.mode == "last-checkpoint":
        return _checkpoint_restart(settings, intent)
    if intent.closed_failed:
        return _closed(intent, f"{intent.purpose} from savepoint {intent.savepoint}",
                       f"`streamops restart {job}`")  # fmt: skip
    if intent.finished or (intent.owner == "cluster-restart" and _cluster_restart_over(settings)):
        return None  # a rolled-back cluster restart started its jobs again on its own
    names = [s.__name__ for s in savepoint_restart.STEPS]
    resume = resume_by_dag(intent.owner) or {
        "cli": f"`streamops restart {job} --savepoint {intent.savepoint}`",
        "rebalance": f"`streamops scale --workers {expected_workers}` (its rebalance resumes "
                     "this restart)",
        "cluster-restart": "the cluster restart (see its check): it restores this job",
    }.get(intent.owner, f"the owner {intent.owner}")  # fmt: skip
    return ProcedureSeen(
        "restart", job, f"{intent.purpose} from savepoint {intent.savepoint}", intent.owner,
        intent.phase, next((n for n in names if n not in intent.done), None),
        float(intent.times.get("begin", intent.at)), float(intent.at), resume,
        stopped="request_savepoint" in intent.done,
    )  # fmt: skip


def _closed(intent: JobRestart, what: str, resume: str) -> ProcedureSeen | None:
    """A restart closed as failed having changed nothing: shown (a warning) for an hour."""
    if time.time() - intent.at > CLOSED_SHOWN_S:
        return None
    return ProcedureSeen("restart", intent.job, what, intent.owner, intent.phase,
                         intent.failed_step, float(intent.times.get("begin", intent.at)),
                         float(intent.at), resume, failure=intent.failure,
                         closed=True)  # fmt: skip


def _cluster_restart_over(settings: Settings) -> bool:
    intent = cluster_restart.load_intent(settings)
    return intent is None or intent.finished


def _checkpoint_restart(settings: Settings, intent: JobRestart) -> ProcedureSeen | None:
    """A restart from the last checkpoint (``stop`` → ``resubmit`` → ``verify``), in progress
    until a driver is submitted after its last record (the job's own check judges the driver
    from then on; a replacement by the reconcile loop submits it itself)."""
    job = intent.job
    if intent.closed_failed:
        return _closed(intent, "restart from the last checkpoint",
                       f"`streamops restart {job} --mode last-checkpoint`")  # fmt: skip
    if intent.finished or "resubmit" in intent.done:
        return None
    if any(
        s.get("event") == "submitted" and float(s.get("at") or 0) >= intent.at
        for s in read_submissions(settings.layout.submissions_file(job))
    ):  # fmt: skip
        return None
    resume = resume_by_dag(intent.owner) or f"`streamops restart {job} --mode last-checkpoint`"
    names = [s.__name__ for s in restart.CHECKPOINT_STEPS]
    return ProcedureSeen("restart", job, "restart from the last checkpoint", intent.owner,
                         intent.phase, next((n for n in names if n not in intent.done), None),
                         float(intent.times.get("begin", intent.at)), intent.at, resume,
                         stopped=intent.phase == "cancel" or "stop" in intent.done)  # fmt: skip


def _cluster_restart(settings: Settings, _job: None, _workers: int) -> ProcedureSeen | None:
    intent = cluster_restart.load_intent(settings)
    if intent is None or intent.finished:
        return None
    command = (f"`streamops cluster restart --release {intent.release_to}` (resumes it; a "
               "failure rolls back)")  # fmt: skip
    by_dag = resume_by_dag(intent.owner)
    resume = f"{by_dag}; or {command}" if by_dag else command
    at = float(intent.steps[-1]["at"]) if intent.steps else intent.started_at
    return ProcedureSeen(
        "cluster-restart", None, f"cluster restart {intent.release_from or 'none'} → "
        f"{intent.release_to} (jobs {', '.join(sorted(intent.savepoints)) or 'none'})",
        intent.owner, intent.phase, None, intent.started_at, at, resume,
        stopped=bool(intent.saved), failure=intent.reason,
    )  # fmt: skip


def _scale(settings: Settings, _job: None, _workers: int) -> ProcedureSeen | None:
    intent = scale.load_intent(settings)
    if intent is None or intent.finished:
        return None
    command = f"`streamops scale --workers {intent.workers}`"
    by_dag = resume_by_dag(intent.owner)
    resume = f"{by_dag}; or {command}" if by_dag else command
    return ProcedureSeen(
        "scale", None, f"scale to {intent.workers} worker(s)", intent.owner, intent.phase,
        next((s for s in scale.SCALE_STEPS if s not in intent.done), None),
        intent.started_at, intent.at, resume, failure=intent.reason,
    )  # fmt: skip


def _spec_file(settings: Settings, spec: dict[str, Any], job: str, version: str) -> str:
    """The spec file under ``<config>/jobs`` whose spec is ``spec`` (the re-run must give the
    same one), else a placeholder naming the version."""
    for path in sorted((settings.config_dir / "jobs").glob("*.y*ml")):
        try:
            if load_spec(path).model_dump(mode="json") == spec:
                return _shown(path)
        except StreamopsError:
            continue
    return f"<the spec file of {job} v{version}>"


def _shown(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)
