"""Rolling scale of the cluster's workers, through the node agents, with the jobs running.

Observe (agents, the master's JSON, job status) → act (an agent starts or decommissions a
worker) → wait until the master confirms (worker ALIVE / no longer ALIVE) → verify that every
running job keeps committing batches. Workers are removed one at a time by graceful
decommission (SIGPWR: executors drain, blocks move), preferring workers that run no driver.
A job that cannot use new cores (granted fewer than it asks for while cores are free) is
rebalanced: restarted from a fresh savepoint (:mod:`streamops.procedures.savepoint_restart`).

The scale is put together once, as the steps of :data:`STEPS` (``change_workers`` →
``confirm_in_master`` → ``verify_batches_continue`` → ``rebalance``), each ``step(ops, owner,
...)``: the CLI (``streamops scale``) runs them through :func:`run_steps` like every other
procedure, each task of the ``rolling_scale`` DAG runs one. They touch the cluster only through
the operations port: the workers through its ``nodes``
(:class:`~streamops.world.operations.Nodes`: ``scale_to``, ``add_worker``, ``remove_worker``,
``wait_alive_count``, ``running_workers``), the jobs through its ``registry``. They share what
they need through the intent record (``<state>/cluster/intents/scale.json``,
:class:`ScaleIntent`): the first step records the target, its owner (``cli`` or the DAG run)
and the jobs' batch marks before any worker changes, then the workers it started and removed;
:func:`workers_changed` the count reached (also where the health check reads the workers it
expects: :mod:`streamops.state.cluster_size`), :func:`finish` the end. An unfinished one shows
in ``streamops health`` with the command that resumes it (a scale to the same count).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial

from streamops.cluster.client import executor_room
from streamops.cluster.node import wait_for
from streamops.exceptions import ClusterError, JobError, StreamopsError
from streamops.procedures import savepoint_restart
from streamops.procedures.intent_store import IntentStore, StepRecord
from streamops.procedures.job_lease import job_operation
from streamops.procedures.step_runner import run_steps, step_name
from streamops.settings import Settings
from streamops.state.cluster_size import record_desired_workers
from streamops.state.job_status import StageStatus
from streamops.timeouts import HEALTH_TIMEOUT, VERIFY_BATCHES_TIMEOUT
from streamops.world.operations import Operations, ScaleResult, World
from streamops.world.port import operations

log = logging.getLogger("streamops.procedures.scale")
REBALANCE = "rebalance"  # the owner (and purpose) of a rebalance's restart intent
OPERATION = "scale"  # its intent: <state>/cluster/intents/scale.json
CLI_OWNER = "cli"

__all__ = ["STEPS", "ScaleIntent", "batch_marks", "batches_continue", "begin",
           "change_workers", "confirm_in_master", "finish", "load_intent", "rebalance",
           "rebalance_job", "record_failure", "scale", "target_workers",
           "verify_batches_continue", "workers_changed"]  # fmt: skip

BatchMarks = dict[str, dict[str, tuple[int | None, float]]]
"""Per running job, per stage: (last batch id, time of the mark)."""


# --- the jobs keep running ------------------------------------------------------------
def batch_marks(world: World) -> BatchMarks:
    """Per running job and stage, the last committed batch id now."""
    ops = operations(world)
    now = ops.clock.time()
    return {
        view.name: {stage: (info.batch_id, now) for stage, info in view.stages.items()}
        for view in ops.registry.list() if view.is_live
    }


def _advanced(info: StageStatus, mark: tuple[int | None, float]) -> bool:
    batch, at = mark
    current = info.batch_id
    if current is not None and (batch is None or current > batch):
        return True
    idle = info.idle_since
    return idle is not None and idle >= at  # nothing to read: still up


def batches_continue(world: World, marks: BatchMarks, timeout: float = VERIFY_BATCHES_TIMEOUT
                     ) -> dict[str, dict[str, int | None]]:  # fmt: skip
    """Wait until every stage of every job in ``marks`` committed a batch after its mark."""
    registry = operations(world).registry
    pending = dict(marks)

    def check() -> bool | None:
        for job, stages in list(pending.items()):
            view = registry.view(job)
            if not view.is_live:
                raise JobError(f"job {job} stopped during the scale (state {view.state})")
            if all(_advanced(view.stages.get(s, StageStatus()), m) for s, m in stages.items()):
                log.info("job %s keeps committing batches (%s)", job, ", ".join(
                    f"{s}: {view.stages[s].batch_id}" for s in stages))
                del pending[job]
        return True if not pending else None

    if pending:
        log.info("verifying that %s keep committing batches", ", ".join(pending))
    wait_for(check, timeout, lambda: f"{', '.join(pending)} committed no new batch within "
                                     f"{timeout:.0f}s of the scale")
    return {job: {s: i.batch_id for s, i in registry.view(job).stages.items()}
            for job in marks}


def rebalance_candidates(world: World) -> list[str]:
    """Running jobs granted fewer cores than they ask for while ALIVE workers have free
    cores: the master could not place their executors (e.g. executor size vs new workers);
    first the jobs whose rebalance did not finish (a retried task resumes them)."""
    ops = operations(world)
    registry, client = ops.registry, ops.client
    workers = client.workers()
    apps = {a.name: a for a in client.active_apps()}
    out = [job for job in registry.names() if _rebalancing(ops, job)]
    for view in registry.list():
        if view.name in out:
            continue
        app = apps.get(view.name)
        if not view.is_live or app is None:
            continue
        try:
            spec = registry.current_spec(view.name)
        except StreamopsError:
            continue
        if app.cores < spec.resources.max_cores and executor_room(workers, spec.executor_cores):
            out.append(view.name)
    return out


def _rebalancing(ops: Operations, job: str) -> bool:
    intent = savepoint_restart.load_intent(ops, job)
    return intent is not None and intent.owner == REBALANCE and not intent.finished and (
        intent.mode == "savepoint" and len(intent.done) > 1
    )  # fmt: skip


def rebalance_job(world: World, job: str, health_timeout: float = HEALTH_TIMEOUT) -> str:
    """Restart ``job`` from a fresh savepoint so its executors spread over the workers (an
    unfinished rebalance of ``job`` is resumed); the new driver's id."""
    log.info("rebalancing %s: savepoint with cancel, then start from it", job)
    ops = operations(world)
    with job_operation(ops, job, "rebalance (scale)"):
        savepoint_restart.begin(ops, job, REBALANCE, purpose=REBALANCE)
        run_steps(savepoint_restart.STEPS, ops, job, REBALANCE,
                  waits={**savepoint_restart.WAITS, "verify": health_timeout})  # fmt: skip
    intent = savepoint_restart.load_intent(ops, job)
    return str(intent.new_driver if intent else None)


# --- the intent ------------------------------------------------------------------------
@dataclass
class ScaleIntent(StepRecord):
    """What a scale is doing; saved before the workers change and after every step."""

    owner: str  # ``cli`` or ``airflow:<dag>/<run>``
    workers: int  # the target count of ALIVE workers
    before: int | None = None  # running workers when it began
    started_at: float = field(default_factory=time.time)
    reason: str | None = None
    marks: dict[str, dict[str, list[float | int | None]]] = field(default_factory=dict)
    """Per running job and stage, ``[last batch id, time]`` when the scale began."""
    started: list[str] = field(default_factory=list)  # the workers it started, removed,
    removed: list[str] = field(default_factory=list)  # and those running once they changed
    running: list[str] = field(default_factory=list)

    def begun_marks(self) -> BatchMarks:
        return {job: {stage: (None if m[0] is None else int(m[0]), float(m[1]))  # type: ignore[arg-type]
                      for stage, m in stages.items()} for job, stages in self.marks.items()}

    def result(self) -> ScaleResult:
        return ScaleResult(tuple(self.started), tuple(self.removed), tuple(self.running))


STORE = IntentStore(ScaleIntent, OPERATION, error=ClusterError,
                    describe=lambda i: f"scale to {i.workers} worker(s) ({i.owner})")  # fmt: skip


def load_intent(world: World) -> ScaleIntent | None:
    return STORE.load(world)


def target_workers(world: World, *, workers: int | None = None, add: str | None = None,
                   remove: str | None = None) -> int:  # fmt: skip
    """The ALIVE workers a scale ends with: ``workers``, or one more (``add``) or one fewer
    (``remove``) than run now (the port's nodes count them)."""
    if workers is not None:
        return workers
    running = operations(world).require_nodes().running_workers()
    if add is not None:
        return len(running) + (add not in running)
    return len(running) - (remove in running)


def begin(settings: Settings, owner: str, workers: int, before: int | None = None,
          marks: BatchMarks | None = None) -> ScaleIntent:  # fmt: skip
    """Record that ``owner`` scales to ``workers``, with the jobs' batch ``marks``, before any
    worker changes. An unfinished scale to another count, or of another owner, is replaced
    (a scale is idempotent: the workers are counted again); the same one is resumed, its
    marks kept."""
    previous = load_intent(settings)
    if previous is not None and not previous.finished:
        if previous.owner == owner and previous.workers == workers:
            log.info("resuming the scale to %s worker(s) at phase %s", workers, previous.phase)
            return previous
        log.warning("an unfinished scale to %s worker(s) of %s (phase %s) is replaced",
                    previous.workers, previous.owner, previous.phase)  # fmt: skip
    intent = ScaleIntent(owner=owner, workers=workers, before=before, marks={
        job: {stage: list(mark) for stage, mark in stages.items()}
        for job, stages in (marks or {}).items()})  # fmt: skip
    STORE.save(settings, intent, "begun")
    return intent


def step_done(settings: Settings, owner: str, step: str) -> ScaleIntent:
    """Record that ``step`` (one of :data:`SCALE_STEPS`) of ``owner``'s scale is done."""
    over = STORE.finished_of(settings, None, owner)
    if over is not None:
        return over
    intent = STORE.owned(settings, None, owner)
    STORE.done(settings, intent, step, step.replace("_", "-"))
    return intent


def workers_changed(settings: Settings, owner: str) -> ScaleIntent:
    """The workers reached the target: record it as the count the cluster should run (the
    health check expects it from now on), then the step."""
    intent = STORE.owned(settings, None, owner)
    record_desired_workers(settings.layout, intent.workers, by=f"scale ({owner})")
    return step_done(settings, owner, "change_workers")


def finish(settings: Settings, owner: str) -> ScaleIntent:
    """The scale is over (a retry after it finished changes nothing)."""
    over = STORE.finished_of(settings, None, owner)
    if over is not None:
        return over
    intent = STORE.owned(settings, None, owner)
    STORE.save(settings, intent, "done")
    return intent


def record_failure(settings: Settings, owner: str, reason: str) -> None:
    """Keep why a step failed in the intent (health shows it)."""
    intent = load_intent(settings)
    if intent is not None and not intent.finished and intent.owner == owner:
        intent.reason = reason[:2000]
        STORE.save(settings, intent, intent.phase)


@contextmanager
def _recorded(settings: Settings, owner: str, step: str) -> Iterator[None]:
    """Run a step; its failure is kept in the scale's intent (health shows it)."""
    try:
        yield
    except StreamopsError as exc:
        record_failure(settings, owner, f"{type(exc).__name__}: {exc} (step {step} failed)")
        raise


# --- the steps (the CLI runs them all, each DAG task one) --------------------------------
def change_workers(ops: Operations, owner: str, *, workers: int | None = None,
                   add: str | None = None, remove: str | None = None,
                   marks: BatchMarks | None = None) -> ScaleResult:  # fmt: skip
    """Record the scale's target and the jobs' batch marks (``begin``; ``marks`` taken now
    unless given), then start or decommission workers until it runs (exactly one of
    ``workers``, ``add``, ``remove``) through the port's nodes; what changed is kept in the
    intent."""
    settings, nodes = ops.settings, ops.require_nodes()
    target = target_workers(ops, workers=workers, add=add, remove=remove)
    begin(settings, owner, target, marks=batch_marks(ops) if marks is None else marks)
    with _recorded(settings, owner, "change_workers"):
        if workers is not None:
            result = nodes.scale_to(workers)
        elif add is not None:
            result = nodes.add_worker(add)
        else:
            assert remove is not None, "give one of workers, add, remove"
            result = nodes.remove_worker(remove)
    intent = STORE.owned(settings, None, owner)
    intent.started, intent.removed, intent.running = (list(result.started),
                                                      list(result.removed), list(result.running))
    STORE.save(settings, intent, intent.phase)
    return result


def confirm_in_master(ops: Operations, owner: str, expected: int | None = None) -> None:
    """The master lists ``expected`` (default: the target) ALIVE workers: from now on health
    expects them."""
    settings = ops.settings
    if expected is None:
        expected = STORE.owned(settings, None, owner).workers
    with _recorded(settings, owner, "confirm_in_master"):
        ops.require_nodes().wait_alive_count(expected)
    workers_changed(settings, owner)
    step_done(settings, owner, "confirm_in_master")


def verify_batches_continue(ops: Operations, owner: str, timeout: float = VERIFY_BATCHES_TIMEOUT
                            ) -> dict[str, dict[str, int | None]]:  # fmt: skip
    """Every job marked when the scale began committed a batch after the change."""
    settings = ops.settings
    marks = STORE.owned(settings, None, owner).begun_marks()
    with _recorded(settings, owner, "verify_batches_continue"):
        batches = batches_continue(ops, marks, timeout)
    step_done(settings, owner, "verify_batches_continue")
    return batches


def rebalance(ops: Operations, owner: str) -> list[str]:
    """Restart from a savepoint every job that cannot use the free cores → done."""
    settings = ops.settings
    with _recorded(settings, owner, "rebalance"):
        jobs = rebalance_candidates(ops)
        for job in jobs:
            log.info("job %s cannot use the free cores; rebalancing it", job)
            rebalance_job(ops, job)
    step_done(settings, owner, "rebalance")
    finish(settings, owner)
    return jobs


STEPS = (change_workers, confirm_in_master, verify_batches_continue, rebalance)
SCALE_STEPS = tuple(step_name(s) for s in STEPS)
"""The steps' names, in order, as the intent records them done."""


def scale(world: World, *, workers: int | None = None, add: str | None = None,
          remove: str | None = None, verify: bool = True, owner: str = CLI_OWNER,
          timeout: float = VERIFY_BATCHES_TIMEOUT) -> ScaleResult:  # fmt: skip
    """The whole rolling scale, :data:`STEPS` through the step runner: change the workers,
    confirm them in the master, and (with ``verify``) check that the jobs keep committing
    batches and rebalance those that cannot use the new cores. A re-run with the same target
    resumes an unfinished one."""
    ops = operations(world)
    first = partial(change_workers, workers=workers, add=add, remove=remove)
    steps = [first, *STEPS[1:]] if verify else [first, STEPS[1]]
    run_steps(steps, ops, owner, waits={"verify_batches_continue": timeout})
    if not verify:
        finish(ops.settings, owner)
    intent = load_intent(ops)
    assert intent is not None, "a scale that ran keeps its intent"
    return intent.result()
