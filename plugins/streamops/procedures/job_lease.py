"""Holding a job's operation lease (:mod:`streamops.state.op_lease`) for an operation's run.

Every operation that changes a job (submit, cancel, a savepoint, restore, upgrade and its
rollback, restart, a scale's rebalance, a cluster restart's handover, each reconcile action)
runs inside :func:`job_operation`: the lease is taken (or :class:`~streamops.exceptions.JobBusy`
is raised at once, naming the holder; ``wait`` queues behind it), renewed by a heartbeat
thread while the operation runs, its step kept current by the step runner
(:func:`note_step`), and given up at the end. Nested operations of one process on one job
(an upgrade's rollback restoring the old version) hold it once.

Who holds it is the *actor* of the calling context (:func:`acting_as`): the CLI sets
``cli`` and its ``--wait``, the reconcile ``reconcile`` and its pass, a DAG task ``dag`` and
its run (whose lease outlives the task: ``keep``, released by the DAG's callbacks); any
other caller holds it as ``api``, for its process.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

from streamops.exceptions import OperationLost
from streamops.procedures.intent_store import HasLayout
from streamops.state import op_lease
from streamops.state.layout import StateLayout
from streamops.state.op_lease import OperationLease

log = logging.getLogger("streamops.procedures.job_lease")


@dataclass(frozen=True)
class Actor:
    """Who runs the operations of this context, and how long one waits for a busy job."""

    role: str = "api"  # a library caller (a DAG's cluster task): alive while its process is
    run: str = ""  # "": this process (``<role>-<pid>``)
    wait: float = 0.0

    def run_id(self) -> str:
        return self.run or f"{self.role}-{os.getpid()}"


_ACTOR: ContextVar[Actor | None] = ContextVar("streamops_actor", default=None)


@dataclass
class _Held:
    layout: StateLayout
    lease: OperationLease
    depth: int = 1
    stop: threading.Event = field(default_factory=threading.Event)
    lost: bool = False  # another operator took the job over: stop at the next step


_HELD: dict[tuple[str, str], _Held] = {}  # (state root, job) → this process's hold
_GUARD = threading.Lock()
_CURRENT: ContextVar[_Held | None] = ContextVar("streamops_job_operation", default=None)


@contextmanager
def acting_as(role: str, run: str = "", *, wait: float = 0.0) -> Iterator[Actor]:
    """Run the operations of the block as ``role``/``run``, waiting up to ``wait`` seconds
    for a busy job."""
    actor = Actor(role, run, wait)
    token = _ACTOR.set(actor)
    try:
        yield actor
    finally:
        _ACTOR.reset(token)


def current_actor() -> Actor:
    return _ACTOR.get() or Actor()


@contextmanager
def job_operation(world: HasLayout, job: str, procedure: str, *, keep: bool = False,
                  wait: float | None = None) -> Iterator[OperationLease]:  # fmt: skip
    """Hold ``job``'s operation lease for ``procedure`` during the block (see the module's
    doc); ``keep``: leave it held at the end (a DAG run's task)."""
    layout = world.layout
    key = (str(layout.root), job)
    with _GUARD:
        held = _HELD.get(key)
        if held is not None:
            held.depth += 1
    if held is not None:
        try:
            yield held.lease
        finally:
            with _GUARD:
                held.depth -= 1
        return
    actor = current_actor()
    me = op_lease.holder(job, actor.role, actor.run_id(), procedure)
    lease = op_lease.acquire(layout, me, wait=actor.wait if wait is None else wait)
    log.info("job %s: operation lease held by %s run %s for %s", job, actor.role,
             lease.run, lease.procedure)  # fmt: skip
    held = _Held(layout, lease)
    with _GUARD:
        _HELD[key] = held
    beat = threading.Thread(target=_heartbeat, args=(held,), daemon=True,
                            name=f"operation-lease-{job}")  # fmt: skip
    beat.start()
    token = _CURRENT.set(held)
    try:
        yield lease
    finally:
        _CURRENT.reset(token)
        held.stop.set()
        beat.join(timeout=5)
        with _GUARD:
            _HELD.pop(key, None)
        if not keep:
            op_lease.release(layout, job, lease.role, lease.run)


def _heartbeat(held: _Held) -> None:
    """Renew the lease every third of its TTL (at most every 10 s) until the hold ends."""
    period = min(held.lease.ttl / 3, 10.0)
    while not held.stop.wait(period):
        renewed = op_lease.update(held.layout, held.lease)
        if renewed is None:
            held.lost = True
            log.error("job %s: this operation (%s) lost its operation lease: another operator "
                      "took the job over; it stops before its next step", held.lease.job,
                      held.lease.procedure)  # fmt: skip
            return
        held.lease = renewed


def note_step(step: str) -> None:
    """The operation of this context is at ``step`` now (the step runner's hook): the lease
    names it, and is renewed. An operation whose lease was taken over (it was thought gone)
    raises :class:`~streamops.exceptions.OperationLost` instead of taking the step."""
    held = _CURRENT.get()
    if held is None:
        return
    renewed = None if held.lost else op_lease.update(held.layout, held.lease, step=step)
    if renewed is None:
        held.lost = True
        now = op_lease.read_operation(held.layout, held.lease.job)
        who = now.describe() if now is not None else "nobody holds it now"
        raise OperationLost(
            f"job {held.lease.job}: {held.lease.procedure} stopped before step {step}: another "
            f"operator took the job's operation lease over ({who}); nothing was undone, the "
            "job and its intent are theirs now")  # fmt: skip
    held.lease = renewed


def holder_of(world: HasLayout, job: str) -> OperationLease | None:
    """The live holder of ``job``'s operation lease, if any (gone holders are nobody)."""
    lease = op_lease.read_operation(world.layout, job)
    return lease if lease is not None and op_lease.holder_alive(lease, time.time()) else None
