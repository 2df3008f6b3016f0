"""Rolling scale of the cluster's workers, through the node agents, with the jobs running.

Observe (agents, the master's JSON, job status) → act (an agent starts or decommissions a
worker) → wait until the master confirms (worker ALIVE / no longer ALIVE) → verify that every
running job keeps committing batches. Workers are removed one at a time by graceful
decommission (SIGPWR: executors drain, blocks move), preferring workers that run no driver.
A job that cannot use new cores (granted fewer than it asks for while cores are free) is
rebalanced: restarted from a fresh savepoint (:mod:`streamops.procedures.savepoint_restart`).

The CLI (``streamops scale``) and the ``rolling_scale`` DAG both call these functions, inside
an intent record (``<state>/cluster/intents/scale.json``, :class:`ScaleIntent`): ``begin``
records the target and its owner (``cli`` or the DAG run) before any worker changes,
:func:`workers_changed` the count reached (also where the health check reads the workers it
expects: :mod:`streamops.state.cluster_size`), :func:`finish` the end. An unfinished one shows
in ``streamops health`` with the command that resumes it (a scale to the same count).
"""

from __future__ import annotations

import logging
import time
from dataclasses import asdict, dataclass, field, fields

from streamops.agent.registry import Agents
from streamops.cluster.client import MasterClient, WorkerInfo, executor_room
from streamops.cluster.daemons import worker_index
from streamops.cluster.node import wait_for
from streamops.exceptions import ClusterError, ConfigError, JobError, StreamopsError
from streamops.jobs import JobRegistry, current_spec
from streamops.procedures import savepoint_restart
from streamops.settings import Settings
from streamops.state.cluster_size import record_desired_workers
from streamops.state.layout import read_json, write_json_atomic

log = logging.getLogger("streamops.procedures.scale")
REBALANCE = "rebalance"  # the owner (and purpose) of a rebalance's restart intent
OPERATION = "scale"  # its intent: <state>/cluster/intents/scale.json
CLI_OWNER = "cli"

BatchMarks = dict[str, dict[str, tuple[int | None, float]]]
"""Per running job, per stage: (last batch id, time of the mark)."""


@dataclass(frozen=True)
class ScaleResult:
    started: tuple[str, ...]
    removed: tuple[str, ...]
    running: tuple[str, ...]

    def summary(self) -> str:
        return (f"started {', '.join(self.started) or 'none'}; removed "
                f"{', '.join(self.removed) or 'none'}; running workers now: "
                f"{', '.join(self.running) or 'none'} ({len(self.running)})")


def running_workers(agents: Agents) -> list[str]:
    """Worker nodes whose agent reports a running daemon, in worker order."""
    return [n for n in agents.workers() if agents.client(n).node(n).running]


def alive_in_master(settings: Settings) -> list[WorkerInfo]:
    return [w for w in MasterClient(settings).workers() if w.state == "ALIVE"]


def wait_alive_count(settings: Settings, count: int, timeout: float = 180.0) -> None:
    """Wait until the master lists exactly ``count`` ALIVE workers."""
    log.info("waiting for the master to list %s ALIVE worker(s)", count)
    wait_for(lambda: True if len(alive_in_master(settings)) == count else None, timeout,
             lambda: f"the master lists {len(alive_in_master(settings))} ALIVE workers, not "
                     f"{count}, after {timeout:.0f}s")
    log.info("the master lists %s ALIVE worker(s)", count)


def add_worker(settings: Settings, name: str) -> ScaleResult:
    """Start worker ``name`` through its agent and wait until the master lists it ALIVE."""
    agents = Agents(settings)
    before = running_workers(agents)
    if name in before:
        log.info("%s is already running; nothing to add", name)
        return ScaleResult((), (), tuple(before))
    log.info("adding worker %s through its agent", name)
    agents.client(name).start(name)
    wait_alive_count(settings, len(before) + 1)
    return ScaleResult((name,), (), tuple(running_workers(agents)))


def remove_worker(settings: Settings, name: str) -> ScaleResult:
    """Decommission worker ``name`` gracefully through its agent; wait until it is gone."""
    agents = Agents(settings)
    before = running_workers(agents)
    if name not in before:
        raise ClusterError(f"worker {name} is not running (running: "
                           f"{', '.join(before) or 'none'}); nothing to remove")
    if len(before) == 1:
        raise ClusterError(f"{name} is the last running worker; the jobs need one, keep it")
    log.info("removing worker %s by graceful decommission through its agent", name)
    agents.client(name).decommission(name)
    wait_alive_count(settings, len(before) - 1)
    return ScaleResult((), (name,), tuple(running_workers(agents)))


def _removal_order(settings: Settings, agents: Agents, running: list[str]) -> list[str]:
    """Workers to remove first: those running no driver, then the highest index."""
    drivers_on = {d.worker for d in MasterClient(settings).active_drivers()}

    def runs_driver(name: str) -> bool:
        return agents.client(name).node(name).worker_id in drivers_on

    return sorted(running, key=lambda n: (runs_driver(n), -(worker_index(n) or 0)))


def scale_to(settings: Settings, workers: int) -> ScaleResult:
    """Start idle worker agents' workers, or decommission workers, until ``workers`` run."""
    if workers < 1:
        raise ConfigError(f"invalid worker count {workers}: give 1 or more")
    agents = Agents(settings)
    running = running_workers(agents)
    log.info("scaling from %s to %s worker(s) (running: %s)", len(running), workers,
             ", ".join(running) or "none")
    started: list[str] = []
    removed: list[str] = []
    if workers > len(running):
        idle = [n for n in agents.workers() if n not in running]
        if len(idle) < workers - len(running):
            raise ClusterError(
                f"cannot scale to {workers} workers: only {len(running) + len(idle)} worker "
                f"nodes have an agent ({', '.join(agents.workers())}); start more agents "
                "(profile max_workers) first")
        for name in idle[: workers - len(running)]:
            started += add_worker(settings, name).started
    else:
        for name in _removal_order(settings, agents, running)[: len(running) - workers]:
            removed += remove_worker(settings, name).removed
    result = ScaleResult(tuple(started), tuple(removed), tuple(running_workers(agents)))
    log.info("scale done: %s", result.summary())
    return result


# --- the jobs keep running ------------------------------------------------------------
def batch_marks(settings: Settings) -> BatchMarks:
    """Per running job and stage, the last committed batch id now."""
    now = time.time()
    return {
        view.name: {stage: (info.get("batch_id"), now) for stage, info in view.stages.items()}
        for view in JobRegistry(settings).list() if view.is_live
    }


def _advanced(info: dict[str, object], mark: tuple[int | None, float]) -> bool:
    batch, at = mark
    current = info.get("batch_id")
    if isinstance(current, int) and (batch is None or current > batch):
        return True
    idle = info.get("idle_since")
    return isinstance(idle, float | int) and idle >= at  # nothing to read: still up


def verify_batches_continue(settings: Settings, marks: BatchMarks,
                            timeout: float = 300.0) -> dict[str, dict[str, int | None]]:
    """Wait until every stage of every job in ``marks`` committed a batch after its mark."""
    registry = JobRegistry(settings)
    pending = dict(marks)

    def check() -> bool | None:
        for job, stages in list(pending.items()):
            view = registry.view(job)
            if not view.is_live:
                raise JobError(f"job {job} stopped during the scale (state {view.state})")
            if all(_advanced(view.stages.get(s, {}), m) for s, m in stages.items()):
                log.info("job %s keeps committing batches (%s)", job, ", ".join(
                    f"{s}: {view.stages.get(s, {}).get('batch_id')}" for s in stages))
                del pending[job]
        return True if not pending else None

    if pending:
        log.info("verifying that %s keep committing batches", ", ".join(pending))
    wait_for(check, timeout, lambda: f"{', '.join(pending)} committed no new batch within "
                                     f"{timeout:.0f}s of the scale")
    return {job: {s: i.get("batch_id") for s, i in registry.view(job).stages.items()}
            for job in marks}


def rebalance_candidates(settings: Settings) -> list[str]:
    """Running jobs granted fewer cores than they ask for while ALIVE workers have free
    cores: the master could not place their executors (e.g. executor size vs new workers);
    first the jobs whose rebalance did not finish (a retried task resumes them)."""
    client = MasterClient(settings)
    workers = client.workers()
    apps = {a.name: a for a in client.active_apps()}
    registry = JobRegistry(settings)
    out = [job for job in registry.names() if _rebalancing(settings, job)]
    for view in registry.list():
        if view.name in out:
            continue
        app = apps.get(view.name)
        if not view.is_live or app is None:
            continue
        try:
            spec = current_spec(settings, view.name)
        except StreamopsError:
            continue
        if app.cores < spec.resources.max_cores and executor_room(workers, spec.executor_cores):
            out.append(view.name)
    return out


def _rebalancing(settings: Settings, job: str) -> bool:
    intent = savepoint_restart.load_intent(settings, job)
    return intent is not None and intent.owner == REBALANCE and not intent.finished and (
        len(intent.done) > 1
    )  # fmt: skip


def rebalance(settings: Settings, job: str, health_timeout: float = 300.0) -> str:
    """Restart ``job`` from a fresh savepoint so its executors spread over the workers (an
    unfinished rebalance of ``job`` is resumed); the new driver's id."""
    log.info("rebalancing %s: savepoint with cancel, then start from it", job)
    intent = savepoint_restart.restart(settings, job, REBALANCE, purpose=REBALANCE,
                                       health_timeout=health_timeout)  # fmt: skip
    return str(intent.new_driver)


# --- the intent ------------------------------------------------------------------------
@dataclass
class ScaleIntent:
    """What a scale is doing; saved before the workers change and after every step."""

    owner: str  # ``cli`` or ``airflow:<dag>/<run>``
    workers: int  # the target count of ALIVE workers
    before: int | None = None  # running workers when it began
    phase: str = "begun"
    done: list[str] = field(default_factory=list)
    started_at: float = field(default_factory=time.time)
    at: float = field(default_factory=time.time)  # when ``phase`` was recorded
    reason: str | None = None

    @property
    def finished(self) -> bool:
        return self.phase == "done"


SCALE_STEPS = ("change_workers", "confirm_in_master", "verify_batches_continue", "rebalance")
"""The steps of a scale after ``begin``, in order (the DAG's tasks; the CLI runs them all)."""


def load_intent(settings: Settings) -> ScaleIntent | None:
    data = read_json(settings.layout.intent_file(OPERATION))
    if not isinstance(data, dict) or "workers" not in data or "owner" not in data:
        return None
    names = {f.name for f in fields(ScaleIntent)}
    return ScaleIntent(**{k: v for k, v in data.items() if k in names})


def _save(settings: Settings, intent: ScaleIntent, phase: str) -> None:
    intent.phase, intent.at = phase, time.time()
    write_json_atomic(settings.layout.intent_file(OPERATION), asdict(intent))
    log.info("scale to %s worker(s) (%s): %s", intent.workers, intent.owner, phase)


def target_workers(settings: Settings, *, workers: int | None = None, add: str | None = None,
                   remove: str | None = None) -> int:  # fmt: skip
    """The ALIVE workers a scale ends with: ``workers``, or one more (``add``) or one fewer
    (``remove``) than run now."""
    if workers is not None:
        return workers
    running = running_workers(Agents(settings))
    if add is not None:
        return len(running) + (add not in running)
    return len(running) - (remove in running)


def begin(settings: Settings, owner: str, workers: int, before: int | None = None) -> ScaleIntent:
    """Record that ``owner`` scales to ``workers``, before any worker changes. An unfinished
    scale to another count, or of another owner, is replaced (a scale is idempotent: the
    workers are counted again)."""
    previous = load_intent(settings)
    if previous is not None and not previous.finished:
        if previous.owner == owner and previous.workers == workers:
            log.info("resuming the scale to %s worker(s) at phase %s", workers, previous.phase)
            return previous
        log.warning("an unfinished scale to %s worker(s) of %s (phase %s) is replaced",
                    previous.workers, previous.owner, previous.phase)  # fmt: skip
    intent = ScaleIntent(owner=owner, workers=workers, before=before)
    _save(settings, intent, "begun")
    return intent


def _current(settings: Settings, owner: str) -> ScaleIntent:
    intent = load_intent(settings)
    if intent is None or intent.finished or intent.owner != owner:
        raise ClusterError(f"no scale of {owner} in progress; begin one first")
    return intent


def _over(settings: Settings, owner: str) -> ScaleIntent | None:
    """``owner``'s scale if it is finished (a retried task after it changes nothing)."""
    intent = load_intent(settings)
    return intent if intent is not None and intent.finished and intent.owner == owner else None


def step_done(settings: Settings, owner: str, step: str) -> ScaleIntent:
    """Record that ``step`` (one of :data:`SCALE_STEPS`) of ``owner``'s scale is done."""
    over = _over(settings, owner)
    if over is not None:
        return over
    intent = _current(settings, owner)
    if step not in intent.done:
        intent.done.append(step)
    _save(settings, intent, step.replace("_", "-"))
    return intent


def workers_changed(settings: Settings, owner: str) -> ScaleIntent:
    """The workers reached the target: record it as the count the cluster should run (the
    health check expects it from now on), then the step."""
    intent = _current(settings, owner)
    record_desired_workers(settings.layout, intent.workers, by=f"scale ({owner})")
    return step_done(settings, owner, "change_workers")


def finish(settings: Settings, owner: str) -> ScaleIntent:
    """The scale is over (a retry after it finished changes nothing)."""
    over = _over(settings, owner)
    if over is not None:
        return over
    intent = _current(settings, owner)
    _save(settings, intent, "done")
    return intent


def record_failure(settings: Settings, owner: str, reason: str) -> None:
    """Keep why a step failed in the intent (health shows it)."""
    intent = load_intent(settings)
    if intent is not None and not intent.finished and intent.owner == owner:
        intent.reason = reason[:2000]
        _save(settings, intent, intent.phase)
