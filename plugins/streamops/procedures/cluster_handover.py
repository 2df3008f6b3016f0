"""The cluster restart's warm path: the jar release switched under the running daemons, each
job handed over to a standby that starts on it.

Why the daemons need not stop: the release reaches the job JVMs through the cluster's extra
classpath ``<state>/lib/active/*`` (``SPARK_DIST_CLASSPATH``), which every driver and executor
JVM a worker launches resolves when it starts; the master and the workers load none of the
release's classes. So once the link points at the new release on every node, a new driver and
its executors run on it. Each job then moves as a warm upgrade to its own spec does (its
standby up on the new release, savepoint with cancel, restore; the gap is the savepoint and
the restore) while the cluster runs on. The full stop (:mod:`streamops.procedures.cluster_restart`)
stays for what the daemons themselves load.

Steps, each one function (one task of the ``cluster_restart`` DAG)::

    switch_release     (shared with the full path) the new release active on every node
    hand_over_jobs     each recorded job upgraded to its own spec, standby ``auto``, the
                       restart's savepoint name; a job handed over is not handed over again
    verify_released    every job healthy and reporting the new release → done
    roll_back(reason)  on failure: switch back, then every job whose driver is not the one
                       it had at the begin handed over again (onto the old release); a job
                       found stopped is restored from the restart's savepoint
"""

from __future__ import annotations

import logging

from streamops.exceptions import ClusterRestartFailed, StreamopsError
from streamops.procedures import upgrade_steps
from streamops.procedures.cluster_restart_intent import (
    OWNER,
    STORE,
    RestartIntent,
    current,
    nodes_of,
)
from streamops.procedures.job_lease import job_operation
from streamops.procedures.upgrade import upgrade
from streamops.spec import JobSpec, spec_from_dict
from streamops.timeouts import HEALTH_TIMEOUT
from streamops.world.operations import Operations

log = logging.getLogger("streamops.procedures.cluster_restart")

RELEASE_REPORT_TIMEOUT = 90.0  # a driver reports its release from a start-up hook

__all__ = ["hand_over_jobs", "roll_back", "verify_released"]


def _spec(intent: RestartIntent, job: str) -> JobSpec:
    return spec_from_dict(intent.specs[job], f"the spec of {job} before the cluster restart")


def _hand_over(ops: Operations, job: str, spec: JobSpec, savepoint: str, timeout: float) -> str:
    with job_operation(ops, job, "cluster restart handover"):
        outcome = upgrade(ops, job, spec, savepoint=savepoint, standby="auto", owner=OWNER,
                          health_timeout=timeout, rollback_timeout=timeout)  # fmt: skip
    return outcome.driver_id


def hand_over_jobs(ops: Operations, jobs: list[str] | None = None,
                   timeout: float = HEALTH_TIMEOUT) -> list[str]:  # fmt: skip
    """Hand every recorded job (or ``jobs``) over to a driver on the new release, skipping
    those already handed over; the jobs handed over so far."""
    intent = current(ops)
    if intent.path != "warm":
        raise ClusterRestartFailed(f"the cluster restart to {intent.release_to} takes the "
                                   f"{intent.path} path; its jobs are restored, not handed over")
    if not intent.reached("switched"):
        raise ClusterRestartFailed(f"release {intent.release_to} is not active yet: switch it "
                                   "before handing the jobs over")
    for job, name in intent.savepoints.items():
        if jobs is not None and job not in jobs:
            continue
        if job in intent.restored:
            log.info("job %s is already handed over", job)
            continue
        STORE.save(ops, intent, "handing-over", job=job, savepoint=name)
        driver = _handed_over(ops, job, name) or _hand_over(ops, job, _spec(intent, job), name,
                                                             timeout)  # fmt: skip
        intent.saved.append(job)
        intent.restored.append(job)
        STORE.save(ops, intent, "handed-over", job=job, driver=driver)
        log.info("job %s handed over to driver %s on release %s (savepoint %s)", job, driver,
                 intent.release_to, name)  # fmt: skip
    return list(intent.restored)


def _handed_over(ops: Operations, job: str, savepoint: str) -> str | None:
    """The driver ``job`` was handed over to through ``savepoint``, if that handover is done
    (a step retried after it finished but before the restart recorded it): never twice."""
    last = upgrade_steps.load_intent(ops, job)
    if last is None or last.owner != OWNER or last.savepoint != savepoint or last.phase != "done":
        return None
    log.info("job %s was already handed over to driver %s (savepoint %s)", job,
             last.new_driver, savepoint)  # fmt: skip
    return str(last.new_driver)


def _reported_release(ops: Operations, intent: RestartIntent, job: str, timeout: float) -> str:
    """The release ``job``'s new driver reports (it does so from a start-up hook, after it is
    healthy); ``unknown`` for a job that reported none before the restart either."""
    if job not in intent.releases_before:
        return "unknown"
    deadline = ops.clock.monotonic() + timeout
    while True:
        release = ops.registry.view(job).status.classpath_release
        if release or ops.clock.monotonic() >= deadline:
            return release or "unknown"
        ops.clock.sleep(1.0)


def verify_released(ops: Operations, timeout: float = HEALTH_TIMEOUT,
                    report_timeout: float = RELEASE_REPORT_TIMEOUT) -> dict[str, str]:  # fmt: skip
    """Wait until every handed-over job is healthy and reports the new release → done; per
    job, the release it reports. A job on another release fails the step (and the restart
    rolls back): its new driver did not load the new jars."""
    intent = current(ops)
    releases: dict[str, str] = {}
    for job in intent.restored:
        ops.registry.wait_healthy(job, timeout=timeout)
        releases[job] = _reported_release(ops, intent, job, report_timeout)
    wrong = {job: r for job, r in releases.items() if r not in (intent.release_to, "unknown")}
    if wrong:
        raise ClusterRestartFailed(
            "after their handover " + ", ".join(f"{j} reports release {r}" for j, r in
                                                 wrong.items())
            + f", not {intent.release_to}: their new drivers did not load the new jars")
    STORE.save(ops, intent, "done", releases=releases)
    log.info("cluster restart to %s done (warm path: no daemon stopped); jobs healthy with "
             "releases %s", intent.release_to, releases or "(no jobs)")  # fmt: skip
    return releases


def roll_back(ops: Operations, reason: str, timeout: float = HEALTH_TIMEOUT) -> None:
    """Undo an unfinished warm restart: the old release active again, then every job whose
    driver is not its driver at the begin handed over again (onto the old release); a job
    found stopped is started from the restart's savepoint."""
    intent = current(ops)
    intent.reason = reason
    STORE.save(ops, intent, "rolling-back", reason=reason[:2000])
    if intent.reached("switched") and intent.release_from:
        nodes_of(ops).switch_release(intent.release_from)
    for job, name in intent.savepoints.items():
        view = ops.registry.view(job)
        spec = _spec(intent, job)
        if not view.is_live:
            _restore(ops, job, spec, name)
        elif view.driver_id != intent.drivers.get(job):
            # a driver relaunched from its checkpoint (its worker died mid-handover) answers
            # a savepoint only once it commits again: wait for it, then hand it over
            ops.registry.wait_healthy(job, timeout=timeout)
            log.info("job %s runs driver %s, started during the restart: handing it over "
                     "again onto release %s", job, view.driver_id, intent.release_from)
            _hand_over(ops, job, spec, f"{name}-back", timeout)
    STORE.save(ops, intent, "rolled-back", reason=reason[:2000])


def _restore(ops: Operations, job: str, spec: JobSpec, name: str) -> None:
    """Start a job found stopped: from the restart's savepoint if its handover took one (the
    old driver stopped at it), else from its own checkpoints (its driver died before
    answering: nothing after its last commit was taken from the sources)."""
    if not ops.savepoints.taken(name, job):
        log.warning("job %s is not running and savepoint %s was not taken: starting it from "
                    "its last checkpoint", job, name)  # fmt: skip
        ops.submitter.submit(spec, wait_healthy=None)
        return
    try:
        stages = list(ops.savepoints.get(name, job).stages)
    except StreamopsError as exc:
        raise ClusterRestartFailed(
            f"job {job} is not running and its restart savepoint {name} cannot be read "
            f"({exc}); start it by hand: `streamops restart {job}`") from exc
    log.warning("job %s is not running: starting it from savepoint %s", job, name)
    ops.submitter.start_from_savepoint(spec, name, stages, wait_healthy=None)
