"""Savepoint-and-upgrade as resumable steps over a typed intent, like
:mod:`streamops.procedures.cluster_restart`. The CLI (:func:`streamops.procedures.upgrade.upgrade`)
runs them through the step runner; each task of the ``savepoint_and_upgrade`` DAG runs (or
polls) one. Every step takes ``(ops, job, owner)``: ``ops`` the operations port
(:mod:`streamops.world.operations`), ``owner`` who runs the upgrade (``cli``, or the DAG
run): only that owner resumes it::

    plan                 compare the stages; record the intent: both specs by value (the
                         version started is the version planned), savepoint name, plan,
                         old driver → planned
    start_standby        warm (``standby`` auto|warm|cold): the new version's driver up and
                         ready beside the old one → standby-ready; cold: nothing
    request_savepoint    ask the old driver for the savepoint with cancel, and whether it hands
                         over (room for the new version beside it) → savepoint-requested
    savepoint_answered   the answer is in: queries stopped, lease given up (a poll)
    start_new_version    start the new spec from the savepoint, or release the standby
    verify               wait until the new driver is healthy
    finish               wait until the old driver ended (after its handover) → done
    rollback(reason)     not healthy: restart the old spec from the same savepoint →
                         rolled-back (nothing when no savepoint was taken: v-old runs on)
    abort_standby        the savepoint failed: kill the standby → aborted

The intent is ``jobs/<job>/upgrade.json`` (kept by the intent store of
:mod:`streamops.procedures.intent_store`), written before each destructive step and after it, so
a retried step resumes: a savepoint already requested is not requested again, a new version
already started (or a standby already released) is not started again.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from streamops.exceptions import StreamopsError, UpgradeFailed, UpgradeRefused
from streamops.job_reads import read_submissions
from streamops.planner import StageAction
from streamops.procedures import savepoint_taking
from streamops.procedures.backlog_gate import hold_for_backlog
from streamops.procedures.intent_store import IntentStore, StepRecord
from streamops.procedures.intents import already_started
from streamops.procedures.savepoint_taking import SavepointCancel, request_stands
from streamops.procedures.upgrade_plan import default_savepoint_name, plan_upgrade
from streamops.spec import JobSpec, spec_from_dict
from streamops.timeouts import HEALTH_TIMEOUT, REQUEST_TIMEOUT, STOP_TIMEOUT
from streamops.verdict import Outcome, health_verdict
from streamops.world.operations import Operations, World
from streamops.world.standby import STANDBY_MODES, Standby

log = logging.getLogger("streamops.procedures.upgrade")

PROCEDURE = "upgrade"


@dataclass(kw_only=True)
class UpgradeIntent(StepRecord):
    """What an upgrade is doing; saved after every step."""

    FINISHED = ("done", "rolled-back", "standby-failed", "aborted")

    job: str
    owner: str  # ``cli`` or ``airflow:<dag>/<run>``: only the same owner resumes
    new_spec: dict[str, Any]  # by value, read once before the plan
    old_spec: dict[str, Any]  # the running version's: the rollback starts it again
    from_version: str
    to_version: str
    savepoint: str
    plan: str  # the plan as printed
    restore_stages: list[str]  # every stage the new version runs: restored ones and new ones
    fresh_stages: list[str]  # only the new ones (no stale checkpoint may stay)
    standby_mode: str  # auto | warm | cold
    old_driver: str | None
    standby: dict[str, Any] | None = None  # Standby.to_dict() once a warm standby is ready
    handover: bool | None = None  # decided once, when the savepoint is requested
    request: str | None = None  # the savepoint request's id
    cancel: dict[str, Any] | None = None  # the savepoint with cancel (SavepointCancel.to_dict)
    new_driver: str | None = None
    reason: str | None = None

    def new(self) -> JobSpec:
        return spec_from_dict(self.new_spec, f"new spec of the upgrade of {self.job}")

    def old(self) -> JobSpec:
        return spec_from_dict(self.old_spec, f"rollback spec of the upgrade of {self.job}")

    def ready(self) -> Standby | None:
        return Standby.from_dict(self.standby) if self.standby else None

    def savepoint_cancel(self) -> SavepointCancel:
        """The savepoint with cancel of the old driver (watched alone: a warm standby of the
        new version is live under the job's name too)."""
        if self.cancel:
            return SavepointCancel.from_dict(self.cancel)
        return SavepointCancel(self.job, self.savepoint, cancel=True,
                               handover=bool(self.handover), driver=self.old_driver)  # fmt: skip


STORE = IntentStore(
    UpgradeIntent, PROCEDURE, error=UpgradeFailed,
    describe=lambda i: f"upgrade of {i.job} v{i.from_version} → v{i.to_version}",
)  # fmt: skip
FINISHED = UpgradeIntent.FINISHED


@dataclass(frozen=True)
class Rollback:
    rolled_back: bool  # false when the upgrade had stopped nothing
    message: str


def load_intent(world: World, job: str) -> UpgradeIntent | None:
    return STORE.load(world, job)


def _keeping(ops: Operations, intent: UpgradeIntent) -> savepoint_taking.Save:
    """How the savepoint with cancel's steps save their intent: inside the upgrade's."""

    def save(sp: SavepointCancel, phase: str) -> None:
        intent.cancel, intent.request = sp.to_dict(), sp.request
        STORE.save(ops, intent, phase)

    return save


def plan(
    ops: Operations, job: str, owner: str, new_spec: JobSpec, *, savepoint: str | None = None,
    allow_state_drop: bool = False, standby: str = "cold", now: bool = False,
) -> UpgradeIntent:  # fmt: skip
    """Compare the running stages with ``new_spec``'s and record the intent; nothing stops.
    A refused plan raises :class:`UpgradeRefused`; so does a job whose ``latency_slo`` the
    stop would break, after waiting for its backlog (:mod:`.backlog_gate`; ``now`` skips it).
    The same owner planning the same spec again resumes its unfinished upgrade."""
    if standby not in STANDBY_MODES:
        raise UpgradeRefused(f"standby mode {standby!r} is not one of {', '.join(STANDBY_MODES)}")
    spec_value = new_spec.model_dump(mode="json")
    previous = load_intent(ops, job)
    if previous is not None and not previous.finished:
        if previous.owner == owner and previous.new_spec == spec_value:
            log.info("resuming the upgrade of %s to v%s at phase %s", job, previous.to_version,
                     previous.phase)  # fmt: skip
            return previous
        log.warning("upgrade of %s: an unfinished upgrade of %s (phase %s) is replaced",
                    job, previous.owner, previous.phase)  # fmt: skip
    old = ops.registry.current_spec(job)
    found = plan_upgrade(ops, job, new_spec, allow_state_drop=allow_state_drop, old_spec=old)
    if not found.allowed:
        raise UpgradeRefused(f"upgrade of {job} refused, nothing was stopped: {found.refusal}")
    hold_for_backlog(ops, job, new_spec if new_spec.latency_slo else old, PROCEDURE, now=now,
                     error=UpgradeRefused)  # fmt: skip
    intent = UpgradeIntent(
        job=job, owner=owner, new_spec=spec_value, old_spec=old.model_dump(mode="json"),
        from_version=old.version, to_version=new_spec.version,
        savepoint=savepoint or default_savepoint_name(job, old.version, new_spec.version),
        plan=found.render(),
        restore_stages=[s.stage for s in found.stages if s.action is not StageAction.DROPPED],
        fresh_stages=[s.stage for s in found.stages if s.action is StageAction.NEW],
        standby_mode=standby, old_driver=ops.registry.view(job).driver_id,
    )  # fmt: skip
    STORE.done(ops, intent, "plan", "planned", savepoint=intent.savepoint, owner=owner)
    return intent


def start_standby(
    ops: Operations, job: str, owner: str, *, timeout: float = HEALTH_TIMEOUT
) -> UpgradeIntent:
    """Warm: submit the new version as a standby beside the running one and wait until it is
    ready; cold (``cold``, or ``auto`` without a free core for its driver): nothing. A standby
    that does not come up ends the upgrade (:class:`UpgradeFailed`), the old version untouched."""
    intent, todo = STORE.resume(ops, job, owner, "start_standby")
    if not todo:
        return intent
    if intent.phase == "start-standby":  # a previous attempt submitted one, not seen ready
        _kill_stray_standbys(ops, intent)
    new = intent.new()
    if not ops.submitter.wants_standby(new, intent.standby_mode):
        log.info("upgrade of %s: cold: v%s starts once v%s has stopped", job, new.version,
                 intent.from_version)  # fmt: skip
        STORE.done(ops, intent, "start_standby", "cold")
        return intent
    STORE.save(ops, intent, "start-standby")
    try:
        ready = ops.submitter.start_standby(new, timeout=timeout, new_stages=intent.fresh_stages)
    except StreamopsError as exc:
        intent.reason = str(exc)[:2000]
        STORE.save(ops, intent, "standby-failed", reason=intent.reason)
        raise UpgradeFailed(f"standby v{new.version} of {job} did not come up ({exc}); "
                            f"v{intent.from_version} was not stopped") from exc  # fmt: skip
    intent.standby = ready.to_dict()
    STORE.done(ops, intent, "start_standby", "standby-ready", driver=ready.driver_id)
    return intent


def _kill_stray_standbys(ops: Operations, intent: UpgradeIntent) -> None:
    for sub in read_submissions(ops.layout.submissions_file(intent.job)):
        if sub.get("event") == "submitted" and sub.get("standby") and sub.get("at", 0) >= intent.at:
            log.warning("upgrade of %s: killing standby %s of a previous attempt", intent.job,
                        sub["driver_id"])  # fmt: skip
            ops.client.kill_submission(str(sub["driver_id"]))


def request_savepoint(
    ops: Operations, job: str, owner: str, *, timeout: float = REQUEST_TIMEOUT
) -> UpgradeIntent:
    """Ask the old driver for the savepoint with cancel. It hands over (gives up its lease
    with the answer, then idles until the new version runs, so its shutdown does not compete
    with the new version's first batches) only if the cluster has the cores for the new
    version beside it; else it shuts down at once. A request that failed is sent again."""
    intent, todo = STORE.resume(ops, job, owner, "request_savepoint")
    stands = bool(intent.request) and request_stands(ops.layout, job, str(intent.request))
    if stands and not todo:
        return intent
    if not stands and intent.finished:  # e.g. aborted: a cleared task must not stop v-old now
        raise UpgradeFailed(f"the upgrade of {job} is {intent.phase}; plan another one")
    if intent.handover is None:
        intent.handover = ops.submitter.handover_fits(intent.new(), intent.ready())
    sp = intent.savepoint_cancel()
    sp.handover = intent.handover
    # a request recorded by a previous attempt is waited for (or, never written, sent now)
    savepoint_taking.request(ops, sp, _keeping(ops, intent), timeout=timeout)
    STORE.done(ops, intent, "request_savepoint", "savepoint-requested", request=intent.request)
    return intent


def savepoint_answered(ops: Operations, job: str, owner: str, *, timeout: float = 0.0) -> bool:
    """Whether the old driver answered the savepoint request: its queries are stopped and the
    lease given up, so the new version starts at once either way (the old driver ends on its
    own, or after its handover: ``finish`` waits for it). ``timeout`` 0: one look (a sensor's
    poke); else wait for the answer (every 50 ms) until the request expires, then raise."""
    intent, todo = STORE.resume(ops, job, owner, "savepoint_answered")
    if not todo:
        return True
    if not intent.request:
        raise UpgradeFailed(f"the upgrade of {job} has not requested its savepoint yet")
    sp = intent.savepoint_cancel()
    if not savepoint_taking.answered(ops, sp, _keeping(ops, intent), timeout=timeout):
        return False
    STORE.done(ops, intent, "savepoint_answered", "savepoint-taken",
               savepoint=intent.savepoint, handover=sp.answer.get("handover"))  # fmt: skip
    return True


def start_new_version(ops: Operations, job: str, owner: str) -> UpgradeIntent:
    """Start the new spec from the savepoint (stages by name), or release the warm standby
    from it. The old driver may still idle after its handover: it is allowed."""
    intent, todo = STORE.resume(ops, job, owner, "start_new_version")
    if not todo:
        return intent
    ready = intent.ready()
    if ready is not None:
        if not ops.submitter.released(ready):
            STORE.save(ops, intent, "start-new-version", standby=ready.driver_id)
            ops.submitter.release_standby(ready, intent.savepoint, intent.restore_stages)
        intent.new_driver = ready.driver_id
    else:
        if intent.phase == "start-new-version":  # a previous attempt crashed after it
            intent.new_driver = already_started(ops, job, since=intent.at)
        if intent.new_driver is None:
            STORE.save(ops, intent, "start-new-version")
            intent.new_driver = ops.submitter.start_from_savepoint(
                intent.new(), intent.savepoint, intent.restore_stages, wait_healthy=None,
                replacing=intent.old_driver,
            )  # fmt: skip
    STORE.done(ops, intent, "start_new_version", "new-version-started", driver=intent.new_driver)
    return intent


def verify(
    ops: Operations, job: str, owner: str, *, timeout: float = HEALTH_TIMEOUT
) -> UpgradeIntent:
    """Wait until the new version's driver is healthy."""
    intent, todo = STORE.resume(ops, job, owner, "verify")
    if todo:
        ops.registry.wait_healthy(job, timeout=timeout, since_driver=intent.new_driver)
        STORE.done(ops, intent, "verify", "healthy", driver=intent.new_driver)
    return intent


def finish(ops: Operations, job: str, owner: str) -> UpgradeIntent:
    """Wait until the old driver has ended (after its handover) → done."""
    intent, todo = STORE.resume(ops, job, owner, "finish")
    if not todo:
        return intent
    if intent.old_driver and intent.old_driver != intent.new_driver:
        savepoint_taking.stopped(ops, intent.savepoint_cancel(), _keeping(ops, intent),
                                 timeout=STOP_TIMEOUT)  # fmt: skip
    STORE.done(ops, intent, "finish", "done", driver=intent.new_driver)
    log.info("job %s upgraded v%s → v%s from savepoint %s; driver %s", job,
             intent.from_version, intent.to_version, intent.savepoint,
             intent.new_driver)  # fmt: skip
    return intent


def _stops_nothing(ops: Operations, job: str, owner: str) -> tuple[UpgradeIntent | None, str]:
    """The owner's unfinished upgrade that stopped the old version, else ``None`` and why not
    (the old driver stops only once the savepoint is verified)."""
    intent = load_intent(ops, job)
    if intent is None or intent.owner != owner:
        return None, f"the upgrade of {job} failed before its plan"
    if intent.finished:
        return None, f"the upgrade of {job} is {intent.phase} already"
    if not ops.savepoints.taken(intent.savepoint, intent.job):
        return None, (f"savepoint {intent.savepoint} was not taken, so the upgrade did not "
                      f"stop v{intent.from_version} of {job}")  # fmt: skip
    return intent, ""


def rollback(
    ops: Operations, job: str, owner: str, reason: str | None = None, *,
    timeout: float = HEALTH_TIMEOUT,
) -> Rollback:  # fmt: skip
    """The new version is not healthy: stop it (and a standby, and the old driver if it still
    waits to hand over) and start the old spec from the same savepoint. Nothing when the
    upgrade stopped nothing (no plan, a standby that did not come up, no savepoint)."""
    intent, why = _stops_nothing(ops, job, owner)
    if intent is None:
        log.info("upgrade of %s: nothing to roll back: %s", job, why)
        return Rollback(False, f"nothing to roll back: {why}")
    if reason is None:
        healthy = _healthy_now(ops, job, intent.new_driver)
        if healthy is not None:  # what failed was not the job (e.g. the orchestrator)
            log.warning("upgrade of %s: not rolled back: %s", job, healthy)
            return Rollback(False, f"not rolled back: {healthy}; what failed was not the "
                                   "job: finish the upgrade (clear the failed verify task, or "
                                   "run `streamops upgrade` again)")  # fmt: skip
        view = ops.registry.view(job)
        reason = (f"driver {intent.new_driver or '(none started)'} is {view.state}; "
                  f"{ops.registry.failure_detail(view, intent.new_driver)}")  # fmt: skip
    intent.reason = reason[:2000]
    STORE.save(ops, intent, "rollback", reason=intent.reason)
    ready = intent.ready()
    stop = (intent.new_driver, ready.driver_id if ready else None, intent.old_driver)
    ops.submitter.restore_version(intent.old(), intent.savepoint, stop=stop, wait_healthy=timeout)
    STORE.save(ops, intent, "rolled-back", reason=intent.reason)
    return Rollback(True, f"job {job} v{intent.to_version} did not become healthy ({reason}); "
                          f"rolled back to v{intent.from_version} from savepoint "
                          f"{intent.savepoint}")  # fmt: skip


def _healthy_now(ops: Operations, job: str, new_driver: str | None) -> str | None:
    """The verdict's message when the new version is healthy on ``new_driver`` right now (a
    rollback asked for without a reason, by a verify task that failed, must not undo a
    healthy upgrade: an Airflow restart under the task fails it too); else None."""
    if not new_driver:
        return None
    try:
        verdict = health_verdict(ops.registry.observe(job, new_driver))
    except StreamopsError:
        return None
    return verdict.message if verdict.outcome is Outcome.HEALTHY else None


def abort_standby(ops: Operations, job: str, owner: str) -> bool:
    """The savepoint failed: kill the upgrade's standby if it was not released; without a
    savepoint the upgrade ends here (aborted), the old version running on. Whether a standby
    was killed."""
    intent = load_intent(ops, job)
    if intent is None or intent.owner != owner or intent.finished:
        return False
    ready, killed = intent.ready(), False
    if ready is not None and not ops.submitter.released(ready):
        ops.submitter.abort_standby(ready)
        killed = True
    if not ops.savepoints.taken(intent.savepoint, intent.job):
        STORE.save(ops, intent, "aborted", standby_killed=killed)
    return killed


STEPS = (start_standby, request_savepoint, savepoint_answered, start_new_version, verify, finish)
