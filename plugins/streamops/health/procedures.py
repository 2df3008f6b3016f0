"""Procedures in progress, as the health check sees them: gathered from the intent records
under the state root, of every kind (:mod:`streamops.state.intents` lists them, without the
module of each procedure), judged without I/O.

A procedure that stops something records its intent before it acts (an upgrade
``jobs/<job>/upgrade.json``, a restart ``jobs/<job>/restart.json``, a cluster restart
``<state>/cluster/intents/cluster-restart.json``, a scale ``<state>/cluster/intents/scale.json``,
the reconcile's action on a resource ``<state>/declarative/inflight/<Kind>-<name>.json``).
One whose intent is not finished was interrupted (its CLI killed, its DAG run's Airflow gone,
its reconcile pass killed) or is running now: either way the jobs it stopped do not run, so
health fails, naming the procedure, its owner, where it is, since when, and what resumes it
(a procedure owned by a DAG run: its tasks to clear; by the CLI: the command whose re-run
resumes it; the reconcile's: its next pass). A reconcile action that stops no job warns.
:func:`gather_procedures` reads them (the only I/O here) into :class:`ProcedureSeen` values;
:func:`procedure_result` judges one.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from streamops.exceptions import StreamopsError
from streamops.health.report import CheckResult, Level, ProcedureSeen
from streamops.job_reads import read_submissions
from streamops.settings import Settings
from streamops.spec import load_spec
from streamops.state.intents import IntentSeen, records

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
    whose = proc.job or proc.key
    name = f"procedure/{proc.kind}" + (f"/{whose}" if whose else "")
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
    return CheckResult(group, name, Level.FAIL if proc.fails else Level.WARN, message)


# --- gathering (I/O) -------------------------------------------------------------------
@dataclass(frozen=True)
class _Seen:
    """What every kind's view of its record may look at beside the record."""

    settings: Settings
    expected_workers: int
    cluster_restart_over: bool  # no cluster restart in progress


def gather_procedures(settings: Settings, jobs: list[str], expected_workers: int,
                      found: list[IntentSeen] | None = None) -> list[ProcedureSeen]:  # fmt: skip
    """Every unfinished procedure (and one lately closed as failed), of any kind: the
    procedures of ``jobs``, the cluster's, the reconcile's actions (a record that cannot be
    read is logged and left out); of ``found`` (default: the intent records read now)."""
    found = records(settings.layout) if found is None else found
    ctx = _Seen(settings, expected_workers, not any(
        r.kind.name == "cluster-restart" and not r.finished for r in found))  # fmt: skip
    out: list[ProcedureSeen] = []
    for rec in found:
        if not rec.kind.watched or (rec.job is not None and rec.job not in jobs):
            continue
        try:
            seen = _VIEWS.get(rec.kind.name, _generic)(ctx, rec)
        except (StreamopsError, KeyError, TypeError, ValueError) as exc:
            log.warning("the %s intent of %s cannot be read: %s", rec.kind.title,
                        rec.key or "the cluster", exc)  # fmt: skip
            continue
        if seen is not None:
            out.append(seen)
    return out


def _resume(owner: str, command: str, *, or_command: bool = False) -> str:
    """The DAG run's tasks to clear (with ``or_command``: or the command too), else the
    command."""
    by_dag = resume_by_dag(owner)
    if by_dag is None:
        return command
    return f"{by_dag}; or {command}" if or_command else by_dag


def _upgrade(ctx: _Seen, rec: IntentSeen) -> ProcedureSeen | None:
    d, job = rec.data, str(rec.job)
    what = f"upgrade v{d['from_version']} → v{d['to_version']} (savepoint {d['savepoint']})"
    command = (f"`streamops upgrade {job} "
               f"{_spec_file(ctx.settings, d['new_spec'], job, d['to_version'])}` (the same "
               "spec resumes it as owner cli; it rolls back if the job does not become "
               "healthy)")  # fmt: skip
    if rec.closed_failed or rec.finished:
        return _closed(rec, what, _resume(rec.owner, command))
    return ProcedureSeen(
        "upgrade", job, what, rec.owner, rec.phase, rec.next_step(), rec.since, rec.at,
        _resume(rec.owner, command),
        stopped="request_savepoint" in rec.done or rec.phase == "savepoint-requested",
        failure=rec.failure,
    )  # fmt: skip


def _restart(ctx: _Seen, rec: IntentSeen) -> ProcedureSeen | None:
    d, job = rec.data, str(rec.job)
    if d.get("mode") == "last-checkpoint":
        return _checkpoint_restart(ctx, rec)
    what = f"{d.get('purpose') or 'restart'} from savepoint {d.get('savepoint')}"
    if rec.closed_failed or rec.finished:
        return _closed(rec, what, f"`streamops restart {job}`")
    if rec.owner == "cluster-restart" and ctx.cluster_restart_over:
        return None  # a rolled-back cluster restart started its jobs again on its own
    resume = resume_by_dag(rec.owner) or {
        "cli": f"`streamops restart {job} --savepoint {d.get('savepoint')}`",
        "rebalance": f"`streamops scale --workers {ctx.expected_workers}` (its rebalance "
                     "resumes this restart)",
        "cluster-restart": "the cluster restart (see its check): it restores this job",
    }.get(rec.owner, f"the owner {rec.owner}")  # fmt: skip
    return ProcedureSeen("restart", job, what, rec.owner, rec.phase, rec.next_step("savepoint"),
                         rec.since, rec.at, resume,
                         stopped="request_savepoint" in rec.done)  # fmt: skip


def _closed(rec: IntentSeen, what: str, resume: str) -> ProcedureSeen | None:
    """A procedure closed as failed having changed nothing: shown (a warning) for an hour;
    one finished otherwise: not shown."""
    if not rec.closed_failed or time.time() - rec.at > CLOSED_SHOWN_S:
        return None
    return ProcedureSeen(rec.kind.name, rec.job, what, rec.owner, rec.phase, rec.failed_step,
                         rec.since, rec.at, resume, failure=rec.failure, closed=True,
                         key=None if rec.job else rec.key)  # fmt: skip


def _checkpoint_restart(ctx: _Seen, rec: IntentSeen) -> ProcedureSeen | None:
    """A restart from the last checkpoint (``stop`` → ``resubmit`` → ``verify``), in progress
    until a driver is submitted after its last record (the job's own check judges the driver
    from then on; a replacement by the reconcile loop submits it itself)."""
    job = str(rec.job)
    command = f"`streamops restart {job} --mode last-checkpoint`"
    if rec.closed_failed or rec.finished or "resubmit" in rec.done:
        return _closed(rec, "restart from the last checkpoint", command)
    if any(
        s.get("event") == "submitted" and float(s.get("at") or 0) >= rec.at
        for s in read_submissions(ctx.settings.layout.submissions_file(job))
    ):  # fmt: skip
        return None
    return ProcedureSeen("restart", job, "restart from the last checkpoint", rec.owner,
                         rec.phase, rec.next_step("last-checkpoint"), rec.since, rec.at,
                         _resume(rec.owner, command),
                         stopped=rec.phase == "cancel" or "stop" in rec.done)  # fmt: skip


def _cluster_restart(ctx: _Seen, rec: IntentSeen) -> ProcedureSeen | None:
    d = rec.data
    command = (f"`streamops cluster restart --release {d['release_to']}` (resumes it; a "
               "failure rolls back)")  # fmt: skip
    what = (f"cluster restart {d.get('release_from') or 'none'} → {d['release_to']} (jobs "
            f"{', '.join(sorted(d.get('savepoints') or {})) or 'none'})")  # fmt: skip
    if rec.closed_failed or rec.finished:
        return _closed(rec, what, _resume(rec.owner, command, or_command=True))
    steps = d.get("steps") or []
    at = float(steps[-1]["at"]) if steps else rec.since
    return ProcedureSeen("cluster-restart", None, what, rec.owner, rec.phase, None, rec.since,
                         at, _resume(rec.owner, command, or_command=True),
                         stopped=bool(d.get("saved")), failure=rec.failure)  # fmt: skip


def _scale(ctx: _Seen, rec: IntentSeen) -> ProcedureSeen | None:
    workers = rec.data["workers"]
    what, command = f"scale to {workers} worker(s)", f"`streamops scale --workers {workers}`"
    if rec.closed_failed or rec.finished:
        return _closed(rec, what, _resume(rec.owner, command, or_command=True))
    return ProcedureSeen("scale", None, what, rec.owner, rec.phase, rec.next_step(), rec.since,
                         rec.at, _resume(rec.owner, command, or_command=True),
                         failure=rec.failure)  # fmt: skip


def _reconcile(ctx: _Seen, rec: IntentSeen) -> ProcedureSeen | None:
    """The reconcile's action on a resource: resumed by the next pass. It fails health once
    it asked a savepoint with cancel (the job stops; the procedures it runs have their own
    records), else it warns."""
    d = rec.data
    what = (f"reconcile action {d['action']} of {d['kind']}/{d['name']} (generation "
            f"{d.get('generation')})")  # fmt: skip
    if rec.closed_failed or rec.finished:
        return _closed(rec, what, f"apply {d['kind']}/{d['name']} again (a new generation is "
                                  "tried: `streamops apply`)")  # fmt: skip
    cancel = (d.get("detail") or {}).get("cancel") or {}
    return ProcedureSeen(
        "reconcile", None, what, rec.owner, rec.phase, None, rec.since, rec.at,
        "the next reconcile pass resumes it first (the reconcile DAG on its schedule, or "
        "`streamops reconcile`)", key=rec.key,
        fails=bool(cancel.get("cancel") and cancel.get("request")),
    )  # fmt: skip


def _generic(ctx: _Seen, rec: IntentSeen) -> ProcedureSeen | None:
    """A kind without a view of its own: its title, where it is, and its owner to resume."""
    if rec.closed_failed or rec.finished:
        return _closed(rec, rec.kind.title, f"the owner {rec.owner}")
    return ProcedureSeen(rec.kind.name, rec.job, rec.kind.title, rec.owner, rec.phase,
                         rec.next_step(), rec.since, rec.at,
                         resume_by_dag(rec.owner) or f"the owner {rec.owner}",
                         failure=rec.failure, key=None if rec.job else rec.key)  # fmt: skip


_VIEWS: dict[str, Callable[[_Seen, IntentSeen], ProcedureSeen | None]] = {
    "upgrade": _upgrade, "restart": _restart, "cluster-restart": _cluster_restart,
    "scale": _scale, "reconcile": _reconcile,
}  # fmt: skip


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
