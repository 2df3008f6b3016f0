"""Savepoint-and-upgrade as resumable steps over a typed intent, like
:mod:`streamops.procedures.cluster_restart`. The CLI (:func:`streamops.procedures.upgrade.upgrade`)
runs them in a
loop; each task of the ``savepoint_and_upgrade`` DAG runs (or polls) one. Every step takes
``(settings, job, owner)``; ``owner`` is who runs the upgrade (``cli``, or the DAG run), and
only that owner resumes it::

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

The intent is ``jobs/<job>/upgrade.json`` (an intent record of :mod:`streamops.procedures.intents`:
``phase`` and ``at`` on top), written before each destructive step and after it, so a retried
step resumes: a savepoint already requested is not requested again, a new version already
started (or a standby already released) is not started again.
"""

from __future__ import annotations

import logging
import time
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from streamops.exceptions import SavepointNotFound, StreamopsError
from streamops.jobs import JobRegistry, current_spec, read_submissions
from streamops.planner import StageAction
from streamops.procedures import savepoint_taking
from streamops.procedures import standby as standbys
from streamops.procedures.intents import already_started, read_intent, resume_step
from streamops.procedures.restore import restore_version, start_from_savepoint
from streamops.procedures.savepoint_taking import SavepointCancel, request_stands
from streamops.procedures.standby import STANDBY_MODES, Standby
from streamops.procedures.upgrade_plan import (
    UpgradeFailed,
    UpgradeRefused,
    default_savepoint_name,
    plan_upgrade,
)
from streamops.settings import Settings
from streamops.spec import JobSpec, spec_from_dict
from streamops.state.layout import write_json_atomic
from streamops.state.savepoints.catalogue import get_savepoint
from streamops.verdict import Outcome, health_verdict

log = logging.getLogger("streamops.procedures.upgrade")

PROCEDURE = "upgrade"
FINISHED = ("done", "rolled-back", "standby-failed", "aborted")
HEALTH_TIMEOUT = 300.0
SAVEPOINT_TIMEOUT = 240.0  # the wait for the answer (its request expires after 180 s)
REQUEST_TIMEOUT = savepoint_taking.REQUEST_TIMEOUT  # it expires unanswered after this


@dataclass
class UpgradeIntent:
    """What an upgrade is doing; saved after every step."""

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
    phase: str = "planned"
    done: list[str] = field(default_factory=list)  # the steps done
    reason: str | None = None
    at: float = field(default_factory=time.time)  # when ``phase`` was recorded
    times: dict[str, float] = field(default_factory=dict)

    @property
    def finished(self) -> bool:
        return self.phase in FINISHED

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


@dataclass(frozen=True)
class Rollback:
    rolled_back: bool  # false when the upgrade had stopped nothing
    message: str


def load_intent(settings: Settings, job: str) -> UpgradeIntent | None:
    data = read_intent(settings, job, PROCEDURE)  # none, or of an earlier format: no new_spec
    names = {f.name for f in fields(UpgradeIntent)}
    return UpgradeIntent(**{k: data[k] for k in names if k in data}) if "new_spec" in data else None


def _save(settings: Settings, intent: UpgradeIntent, phase: str, **detail: Any) -> None:
    intent.phase, intent.at = phase, time.time()
    write_json_atomic(settings.layout.intent_record(intent.job, PROCEDURE), asdict(intent))
    extra = ", ".join(f"{k} {v}" for k, v in detail.items())
    log.info("upgrade of %s v%s → v%s: %s%s", intent.job, intent.from_version,
             intent.to_version, phase, f" ({extra})" if extra else "")  # fmt: skip


def _todo(settings: Settings, job: str, owner: str, step: str) -> tuple[UpgradeIntent, bool]:
    """The upgrade in progress of ``owner``, and whether ``step`` is still to do."""
    return resume_step(load_intent(settings, job), job, owner, step, procedure="upgrade",
                       first="plan", error=UpgradeFailed)  # fmt: skip


def _keeping(settings: Settings, intent: UpgradeIntent) -> savepoint_taking.Save:
    """How the savepoint with cancel's steps save their intent: inside the upgrade's."""

    def save(sp: SavepointCancel, phase: str) -> None:
        intent.cancel, intent.request = sp.to_dict(), sp.request
        _save(settings, intent, phase)

    return save


def _done(settings: Settings, intent: UpgradeIntent, step: str, phase: str, **detail: Any) -> None:
    if step not in intent.done:
        intent.done.append(step)
    intent.times[step] = time.time()
    _save(settings, intent, phase, **detail)


def plan(
    settings: Settings, job: str, owner: str, new_spec: JobSpec, *, savepoint: str | None = None,
    allow_state_drop: bool = False, standby: str = "cold",
) -> UpgradeIntent:  # fmt: skip
    """Compare the running stages with ``new_spec``'s and record the intent; nothing stops.
    A refused plan raises :class:`UpgradeRefused`. The same owner planning the same spec
    again resumes its unfinished upgrade."""
    if standby not in STANDBY_MODES:
        raise UpgradeRefused(f"standby mode {standby!r} is not one of {', '.join(STANDBY_MODES)}")
    spec_value = new_spec.model_dump(mode="json")
    previous = load_intent(settings, job)
    if previous is not None and not previous.finished:
        if previous.owner == owner and previous.new_spec == spec_value:
            log.info("resuming the upgrade of %s to v%s at phase %s", job, previous.to_version,
                     previous.phase)  # fmt: skip
            return previous
        log.warning("upgrade of %s: an unfinished upgrade of %s (phase %s) is replaced",
                    job, previous.owner, previous.phase)  # fmt: skip
    old = current_spec(settings, job)
    found = plan_upgrade(settings, job, new_spec, allow_state_drop=allow_state_drop, old_spec=old)
    if not found.allowed:
        raise UpgradeRefused(f"upgrade of {job} refused, nothing was stopped: {found.refusal}")
    intent = UpgradeIntent(
        job=job, owner=owner, new_spec=spec_value, old_spec=old.model_dump(mode="json"),
        from_version=old.version, to_version=new_spec.version,
        savepoint=savepoint or default_savepoint_name(job, old.version, new_spec.version),
        plan=found.render(),
        restore_stages=[s.stage for s in found.stages if s.action is not StageAction.DROPPED],
        fresh_stages=[s.stage for s in found.stages if s.action is StageAction.NEW],
        standby_mode=standby, old_driver=JobRegistry(settings).view(job).driver_id,
    )  # fmt: skip
    _done(settings, intent, "plan", "planned", savepoint=intent.savepoint, owner=owner)
    return intent


def start_standby(
    settings: Settings, job: str, owner: str, *, timeout: float = HEALTH_TIMEOUT
) -> UpgradeIntent:
    """Warm: submit the new version as a standby beside the running one and wait until it is
    ready; cold (``cold``, or ``auto`` without a free core for its driver): nothing. A standby
    that does not come up ends the upgrade (:class:`UpgradeFailed`), the old version untouched."""
    intent, todo = _todo(settings, job, owner, "start_standby")
    if not todo:
        return intent
    if intent.phase == "start-standby":  # a previous attempt submitted one, not seen ready
        _kill_stray_standbys(settings, intent)
    new = intent.new()
    if not standbys.wants_standby(JobRegistry(settings), new, intent.standby_mode):
        log.info("upgrade of %s: cold: v%s starts once v%s has stopped", job, new.version,
                 intent.from_version)  # fmt: skip
        _done(settings, intent, "start_standby", "cold")
        return intent
    _save(settings, intent, "start-standby")
    try:
        ready = standbys.start_standby(new, settings, timeout=timeout,
                                       new_stages=intent.fresh_stages)  # fmt: skip
    except StreamopsError as exc:
        intent.reason = str(exc)[:2000]
        _save(settings, intent, "standby-failed", reason=intent.reason)
        raise UpgradeFailed(f"standby v{new.version} of {job} did not come up ({exc}); "
                            f"v{intent.from_version} was not stopped") from exc  # fmt: skip
    intent.standby = ready.to_dict()
    _done(settings, intent, "start_standby", "standby-ready", driver=ready.driver_id)
    return intent


def _kill_stray_standbys(settings: Settings, intent: UpgradeIntent) -> None:
    registry = JobRegistry(settings)
    for sub in read_submissions(settings.layout.submissions_file(intent.job)):
        if sub.get("event") == "submitted" and sub.get("standby") and sub.get("at", 0) >= intent.at:
            log.warning("upgrade of %s: killing standby %s of a previous attempt", intent.job,
                        sub["driver_id"])  # fmt: skip
            registry.client.kill_submission(str(sub["driver_id"]))


def request_savepoint(
    settings: Settings, job: str, owner: str, *, timeout: float = REQUEST_TIMEOUT
) -> UpgradeIntent:
    """Ask the old driver for the savepoint with cancel. It hands over (gives up its lease
    with the answer, then idles until the new version runs, so its shutdown does not compete
    with the new version's first batches) only if the cluster has the cores for the new
    version beside it; else it shuts down at once. A request that failed is sent again."""
    intent, todo = _todo(settings, job, owner, "request_savepoint")
    stands = bool(intent.request) and request_stands(settings.layout, job, str(intent.request))
    if stands and not todo:
        return intent
    if not stands and intent.finished:  # e.g. aborted: a cleared task must not stop v-old now
        raise UpgradeFailed(f"the upgrade of {job} is {intent.phase}; plan another one")
    if intent.handover is None:
        registry = JobRegistry(settings)
        intent.handover = standbys.handover_fits(registry, intent.new(), intent.ready())
    sp = intent.savepoint_cancel()
    sp.handover = intent.handover
    # a request recorded by a previous attempt is waited for (or, never written, sent now)
    savepoint_taking.request(settings, sp, _keeping(settings, intent), timeout=timeout)
    _done(settings, intent, "request_savepoint", "savepoint-requested", request=intent.request)
    return intent


def savepoint_answered(
    settings: Settings, job: str, owner: str, *, timeout: float = 0.0
) -> bool:
    """Whether the old driver answered the savepoint request: its queries are stopped and the
    lease given up, so the new version starts at once either way (the old driver ends on its
    own, or after its handover: ``finish`` waits for it). ``timeout`` 0: one look (a sensor's
    poke); else wait for the answer (every 50 ms) until the request expires, then raise."""
    intent, todo = _todo(settings, job, owner, "savepoint_answered")
    if not todo:
        return True
    if not intent.request:
        raise UpgradeFailed(f"the upgrade of {job} has not requested its savepoint yet")
    sp = intent.savepoint_cancel()
    if not savepoint_taking.answered(settings, sp, _keeping(settings, intent), timeout=timeout):
        return False
    _done(settings, intent, "savepoint_answered", "savepoint-taken",
          savepoint=intent.savepoint, handover=sp.answer.get("handover"))  # fmt: skip
    return True


def start_new_version(settings: Settings, job: str, owner: str) -> UpgradeIntent:
    """Start the new spec from the savepoint (stages by name), or release the warm standby
    from it. The old driver may still idle after its handover: it is allowed."""
    intent, todo = _todo(settings, job, owner, "start_new_version")
    if not todo:
        return intent
    ready = intent.ready()
    if ready is not None:
        if not standbys.released(settings, ready):
            _save(settings, intent, "start-new-version", standby=ready.driver_id)
            standbys.release_standby(settings, ready, intent.savepoint, intent.restore_stages)
        intent.new_driver = ready.driver_id
    else:
        intent.new_driver = already_started(settings, job, PROCEDURE, "start-new-version",
                                            owner=owner)  # fmt: skip
        if intent.new_driver is None:
            _save(settings, intent, "start-new-version")
            intent.new_driver = start_from_savepoint(
                intent.new(), settings, intent.savepoint, intent.restore_stages,
                wait_healthy=None, replacing=intent.old_driver,
            )  # fmt: skip
    _done(settings, intent, "start_new_version", "new-version-started", driver=intent.new_driver)
    return intent


def verify(
    settings: Settings, job: str, owner: str, *, timeout: float = HEALTH_TIMEOUT
) -> UpgradeIntent:
    """Wait until the new version's driver is healthy."""
    intent, todo = _todo(settings, job, owner, "verify")
    if todo:
        JobRegistry(settings).wait_healthy(job, timeout=timeout, since_driver=intent.new_driver)
        _done(settings, intent, "verify", "healthy", driver=intent.new_driver)
    return intent


def finish(settings: Settings, job: str, owner: str) -> UpgradeIntent:
    """Wait until the old driver has ended (after its handover) → done."""
    intent, todo = _todo(settings, job, owner, "finish")
    if not todo:
        return intent
    if intent.old_driver and intent.old_driver != intent.new_driver:
        savepoint_taking.stopped(settings, intent.savepoint_cancel(), _keeping(settings, intent),
                                 timeout=savepoint_taking.STOP_TIMEOUT)  # fmt: skip
    _done(settings, intent, "finish", "done", driver=intent.new_driver)
    log.info("job %s upgraded v%s → v%s from savepoint %s; driver %s", job,
             intent.from_version, intent.to_version, intent.savepoint,
             intent.new_driver)  # fmt: skip
    return intent


def _savepoint_taken(settings: Settings, intent: UpgradeIntent) -> bool:
    try:
        get_savepoint(settings.layout, intent.savepoint, job=intent.job)
    except SavepointNotFound:
        return False
    return True


def _stops_nothing(settings: Settings, job: str, owner: str) -> tuple[UpgradeIntent | None, str]:
    """The owner's unfinished upgrade that stopped the old version, else ``None`` and why not
    (the old driver stops only once the savepoint is verified)."""
    intent = load_intent(settings, job)
    if intent is None or intent.owner != owner:
        return None, f"the upgrade of {job} failed before its plan"
    if intent.finished:
        return None, f"the upgrade of {job} is {intent.phase} already"
    if not _savepoint_taken(settings, intent):
        return None, (f"savepoint {intent.savepoint} was not taken, so the upgrade did not "
                      f"stop v{intent.from_version} of {job}")  # fmt: skip
    return intent, ""


def rollback(
    settings: Settings, job: str, owner: str, reason: str | None = None, *,
    timeout: float = HEALTH_TIMEOUT,
) -> Rollback:  # fmt: skip
    """The new version is not healthy: stop it (and a standby, and the old driver if it still
    waits to hand over) and start the old spec from the same savepoint. Nothing when the
    upgrade stopped nothing (no plan, a standby that did not come up, no savepoint)."""
    intent, why = _stops_nothing(settings, job, owner)
    if intent is None:
        log.info("upgrade of %s: nothing to roll back: %s", job, why)
        return Rollback(False, f"nothing to roll back: {why}")
    registry = JobRegistry(settings)
    if reason is None:
        healthy = _healthy_now(registry, job, intent.new_driver)
        if healthy is not None:  # what failed was not the job (e.g. the orchestrator)
            log.warning("upgrade of %s: not rolled back: %s", job, healthy)
            return Rollback(False, f"not rolled back: {healthy}; what failed was not the "
                                   "job: finish the upgrade (clear the failed verify task, or "
                                   "run `streamops upgrade` again)")  # fmt: skip
        view = registry.view(job)
        reason = (f"driver {intent.new_driver or '(none started)'} is {view.state}; "
                  f"{registry.failure_detail(view, intent.new_driver)}")  # fmt: skip
    intent.reason = reason[:2000]
    _save(settings, intent, "rollback", reason=intent.reason)
    ready = intent.ready()
    stop = (intent.new_driver, ready.driver_id if ready else None, intent.old_driver)
    restore_version(settings, intent.old(), intent.savepoint, stop=stop, wait_healthy=timeout)
    _save(settings, intent, "rolled-back", reason=intent.reason)
    return Rollback(True, f"job {job} v{intent.to_version} did not become healthy ({reason}); "
                          f"rolled back to v{intent.from_version} from savepoint "
                          f"{intent.savepoint}")  # fmt: skip


def _healthy_now(registry: JobRegistry, job: str, new_driver: str | None) -> str | None:
    """The verdict's message when the new version is healthy on ``new_driver`` right now (a
    rollback asked for without a reason, by a verify task that failed, must not undo a
    healthy upgrade: an Airflow restart under the task fails it too); else None."""
    if not new_driver:
        return None
    try:
        verdict = health_verdict(registry.observe(job, new_driver))
    except StreamopsError:
        return None
    return verdict.message if verdict.outcome is Outcome.HEALTHY else None


def abort_standby(settings: Settings, job: str, owner: str) -> bool:
    """The savepoint failed: kill the upgrade's standby if it was not released; without a
    savepoint the upgrade ends here (aborted), the old version running on. Whether a standby
    was killed."""
    intent = load_intent(settings, job)
    if intent is None or intent.owner != owner or intent.finished:
        return False
    ready, killed = intent.ready(), False
    if ready is not None and not standbys.released(settings, ready):
        standbys.abort_standby(settings, ready)
        killed = True
    if not _savepoint_taken(settings, intent):
        _save(settings, intent, "aborted", standby_killed=killed)
    return killed


STEPS = (start_standby, request_savepoint, savepoint_answered, start_new_version, verify, finish)
