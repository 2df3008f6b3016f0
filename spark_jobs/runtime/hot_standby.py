"""Hot standby: a second driver of the running version that takes the job over when it dies.

A job whose spec says ``standby: hot`` runs two drivers of the same version. The one that
holds the job's lease (``streamops_contract.state.lease``) runs the stages; the other, the hot
standby:

1. waits, before it even creates its Spark session, until a live driver holds the lease and
   the job's status says ``RUNNING`` (the two never compete for the machine during a start;
   ``spark_jobs/runtime/hot_roles.py``: a lease whose holder died takes it over instead);
2. builds the stages, waits for its executors and warms them up, rehearses the stages on
   scratch checkpoints (their code compiled, their sources' and sinks' Python running) and
   arms them: their queries are started on the job's checkpoints and held at a gate before
   Spark reads them;
3. writes ``jobs/<job>/standby/hot.json`` (driver, application, worker, which driver it stands
   behind) and watches the lease every :data:`POLL_S`.

When the driver it stands behind dies without giving up the lease (its process is gone, or
its heartbeat stopped for the lease's TTL), the standby takes the lease (the next epoch: the
dead driver's writes are fenced) and opens its gate; the armed queries read the checkpoints
as the dead driver left them and replay its unfinished batch (the sinks are idempotent). The
dead driver, relaunched by the master (``--supervise``), finds the lease held and becomes the
new hot standby; relaunched when nobody live holds the lease (the standby died with it), it
takes the lease and runs the job (``hot_roles.decide``). If the lease is given up cleanly (a
savepoint with cancel, a stop, a source reset), or passes to any other driver, the standby is
dismissed and exits with code 0: it stands behind one driver of one version, never behind
whatever runs next.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from pathlib import Path

from spark_jobs.runtime import placement
from spark_jobs.runtime.context import JobContext
from spark_jobs.runtime.errors import short_error
from spark_jobs.runtime.hot_roles import Dismissed
from spark_jobs.runtime.standby import prepare_reads, rehearse
from spark_jobs.runtime.superseded import superseded
from spark_jobs.runtime.warmup import warm_executors

# the job side's one crossing into the operator: a hot driver moves its own standby through
# the master (allow-listed in scripts/import_cycles.py, docs/architecture.md "Floors")
from streamops.cluster.client import MasterClient
from streamops.cluster.submission import submit_hot_standby
from streamops.settings import Settings
from streamops_contract.exceptions import StreamopsError
from streamops_contract.hosts import this_host
from streamops_contract.spec import JobSpec
from streamops_contract.state import lease
from streamops_contract.state.layout import StateLayout, read_json, write_json_atomic

log = logging.getLogger("spark_jobs.hot_standby")

POLL_S = 0.05  # how often an armed standby reads the lease
EXECUTOR_WAIT_S = 30.0


class JvmGone(Dismissed):
    """This standby's own JVM died (killed: a standby placed beside the primary, a cancel):
    its Python, left behind, must not take the job over, which it could not run."""


DRIVER_JVM_PID = os.getppid()
"""The driver's JVM: PythonRunner starts the driver's Python as its child."""


def check_jvm() -> None:
    """Raise :class:`JvmGone` once this driver's JVM died."""
    if os.getppid() != DRIVER_JVM_PID:
        raise JvmGone(f"this driver's JVM (pid {DRIVER_JVM_PID}) is gone; its Python exits "
                      "without taking the job over")  # fmt: skip


def move_reason(
    client: MasterClient, spec: JobSpec, where: placement.Placement, submitted_as_standby: bool,
    moves: int,
) -> str | None:  # fmt: skip
    """Why this standby should give its place to another, or ``None`` (it stays)."""
    if not submitted_as_standby:
        return "a relaunched driver stands by without a spare executor"
    if not where.beside:
        return None
    cores = spec.resources.driver_cores
    why = (f"after {moves} moves" if moves >= placement.MAX_MOVES
           else None if placement.room_elsewhere(client, where.own_worker, cores)
           else f"no other worker has {cores} core(s) free")  # fmt: skip
    if why:
        log.warning("job %s: the hot standby stays on the running driver's worker %s (%s): "
                    "a loss of that node takes both drivers", spec.name, where.own_worker,
                    why)  # fmt: skip
        return None
    return f"it runs on the running driver's worker {where.own_worker}"


def settings_of(b64: str | None) -> Settings | None:
    """The settings a hot job's driver is submitted with (``--settings-b64``: where the master
    is), or ``None`` without them. The driver's only use of the operator's settings: its
    calls to the master live here and in :mod:`.placement` (docs/architecture.md, "Floors")."""
    return Settings.from_b64(b64) if b64 else None


def stays(
    layout: StateLayout, spec: JobSpec, settings: Settings | None, submitted_as_standby: bool,
    moves: int,
) -> bool:  # fmt: skip
    """Whether this standby (its primary running) stays; ``False`` once it submitted another
    standby in its place, because it runs on the running driver's worker (a loss of that
    node would take both) or because it is a relaunched driver, submitted without the spare
    executor a standby keeps apart with (``spark_jobs/runtime/placement.py``). After
    :data:`~spark_jobs.runtime.placement.MAX_MOVES` moves a standby stays where it is."""
    if settings is None:  # submitted without them: it cannot submit, it stays
        return True
    client = MasterClient(settings)
    try:
        where = placement.locate(client, layout, spec.name)
        reason = move_reason(client, spec, where, submitted_as_standby, moves)
        if reason is None:
            return True
        new = submit_hot_standby(spec, settings, client, moves=moves + 1 if where.beside else 0)
    except StreamopsError as exc:  # the master does not answer: stand by where it is
        log.warning("job %s: the standby stays where it is: %s", spec.name, exc)
        return True
    log.warning("job %s: %s; standby %s submitted in its place, this driver exits",
                spec.name, reason, new)  # fmt: skip
    return False


def stand_by(
    ctx: JobContext, behind: lease.Lease, build: Callable[[JobContext], object],
    settings: Settings | None = None,
) -> None:  # fmt: skip
    """With ``ctx``'s stages built: warm up, arm, announce, and watch the lease. Returns once
    this driver holds the lease (``ctx.lease``) because ``behind``'s holder died; raises
    :class:`Dismissed` if it stopped cleanly or the job passed to another driver.

    With ``settings`` (the master's address) it keeps the executors the job needs apart from
    the running driver's worker and releases the others (:func:`placement.release_beside`)."""
    started = time.monotonic()
    layout, job = ctx.layout, ctx.job
    spec = ctx.spec
    needed = spec.resources.max_cores // spec.executor_cores
    granted = int(ctx.spark.conf.get("spark.cores.max", str(spec.resources.max_cores)))
    executors = placement.wait_for_executors(
        ctx.spark, needed, granted // spec.executor_cores, EXECUTOR_WAIT_S
    )
    placed: dict[str, object] = {}
    if settings is not None and executors:  # released before the warm-up: only kept ones warm
        client = MasterClient(settings)
        try:
            where = placement.locate(client, layout, job)
            kept = placement.release_beside(ctx.spark, client, where.primary_worker, needed)
            placed = {**kept, "beside_primary": where.beside}
            executors = len(kept["kept"])
        except Exception as exc:  # the master or a worker did not answer, a kill refused
            log.warning("job %s: the standby's executors stay where the master put them: %s",
                        job, short_error(exc))  # fmt: skip
    executors = warm_executors(ctx.spark, executors, wait_s=0) if executors else 0
    rehearsal = rehearse(ctx, build) if executors else None
    if ctx.gate is None:
        raise ValueError(f"job {job}: a hot standby's context needs a gate_file")
    ctx.gate.arm()
    armed_s = ctx.gate.wait_armed()
    prepare_reads(ctx)
    ident = ctx.board.snapshot()
    doc = {
        "driver_id": ident.driver_id, "app_id": ident.app_id,
        "version": ctx.spec.version, "host": this_host(), "pid": os.getpid(),
        "worker_dir": str(Path.cwd().parent), "behind": behind.holder, "epoch": behind.epoch,
        "executors": executors, "rehearsal_failed": (rehearsal or {}).get("failed") or None,
        "armed_s": armed_s, "warm_up_s": round(time.monotonic() - started, 2),
        "armed_at": time.time(), **placed,
    }  # fmt: skip
    path = layout.hot_standby_file(job)
    write_json_atomic(path, doc)
    log.info("job %s v%s: hot standby armed in %.1fs (%d executor(s)), behind driver %s",
             job, ctx.spec.version, doc["warm_up_s"], executors, behind.holder)  # fmt: skip
    try:
        watch(ctx, behind)
    finally:
        if (read_json(path) or {}).get("pid") == os.getpid():
            path.unlink(missing_ok=True)


def watch(ctx: JobContext, behind: lease.Lease, poll: float = POLL_S) -> None:
    """Wait until ``behind``'s holder dies, then take the lease (see :func:`stand_by`)."""
    layout, job = ctx.layout, ctx.job
    while True:
        check_jvm()  # a standby whose JVM was killed never takes the job (it cannot run it)
        held = lease.read_lease(layout, job)
        if held is None or held.heartbeat_at == 0.0:
            raise Dismissed(f"driver {behind.holder} gave the job's lease up (a clean stop)")
        if (held.epoch, held.holder) != (behind.epoch, behind.holder):
            raise Dismissed(f"job {job} passed to driver {held.holder} (epoch {held.epoch})")
        own = ctx.board.snapshot().driver_id
        if (held.fresh and not lease.holder_gone(held)
                and not superseded(layout, held, own)):  # fmt: skip
            time.sleep(poll)
            continue
        silent = time.time() - held.heartbeat_at
        try:
            app_id = ctx.board.snapshot().app_id
            ctx.lease = lease.acquire(layout, job, ctx.holder, app_id=app_id,
                                      superseded=lambda h, own=own: superseded(layout, h, own))
        except lease.Fenced:  # the relaunched driver was quicker: it runs the job
            raise Dismissed(f"job {job} was taken over by another driver") from None
        ctx.board.identify(started_at=time.time(), took_over_from=held.holder)
        log.warning("job %s: driver %s is gone (last heartbeat %.1fs ago); the hot standby "
                    "takes the job over with lease epoch %d", job, held.holder, silent,
                    ctx.lease.epoch)  # fmt: skip
        return


def report_failure(ctx: JobContext, exc: BaseException) -> None:
    """A standby that failed before it took over: say why where ``streamops jobs`` and the
    next procedure look (its file) and in the log; the job runs on without a standby."""
    error = short_error(exc)[:2000]
    log.error("job %s: the hot standby failed and exits; the job runs on without one until "
              "it is submitted again (any restart, upgrade or `streamops submit`): %s",
              ctx.job, error)  # fmt: skip
    ident = ctx.board.snapshot()
    doc = {"driver_id": ident.driver_id, "pid": os.getpid(), "failed": error,
           "at": time.time()}  # fmt: skip
    write_json_atomic(ctx.layout.hot_standby_file(ctx.job), doc)
