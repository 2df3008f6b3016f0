"""The job's operation lease: one operation (an operator's hand) on a job at a time.

``jobs/<job>/operation.json`` names the holder of the job's operation: its role (``cli``,
``dag``, ``reconcile``), its run (a DAG run id, a reconcile pass, a CLI invocation), the
process (pid, host, start time from ``/proc/<pid>/stat``), the procedure, its current step
and since when. Every change happens under an exclusive ``flock`` of ``operation.lock``.

A holder is live while it provably runs: on this host, its pid exists with the same start
time (a reused pid is not the holder); on another host (or a ``dag`` holder, whose run spans
several task processes), its heartbeat is younger than its TTL. A live holder of another
run refuses the operation (:class:`~streamops.exceptions.JobBusy`, naming it); a gone one is
taken over, with a log line. It is a separate lease from the drivers' fencing lease
(:mod:`streamops_contract.state.lease`), which says which *driver* may write the job's state.
"""

from __future__ import annotations

import logging
import os
import time
from contextlib import AbstractContextManager
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path

from streamops.exceptions import JobBusy
from streamops.state.layout import StateLayout, read_json, write_json_atomic
from streamops_contract.hosts import this_host
from streamops_contract.state.locks import file_lock

log = logging.getLogger("streamops.state.op_lease")

PROCESS_TTL = 30.0
"""A holder's lease, renewed every third of it, for a holder on another host."""
DAG_TTL = 600.0
"""A DAG run's lease (renewed by each of its tasks): a dead scheduler does not hold forever."""
ROLES = ("cli", "dag", "reconcile", "api")  # api: a library caller (its process)


@dataclass(frozen=True)
class OperationLease:
    job: str
    role: str
    run: str
    pid: int
    host: str
    started: str  # the holder's process start time (``/proc/<pid>/stat``, field 22)
    procedure: str
    step: str
    since: float
    heartbeat_at: float
    ttl: float = PROCESS_TTL

    def same_run(self, other: OperationLease) -> bool:
        return (self.role, self.run) == (other.role, other.run)

    def describe(self) -> str:
        """``procedure upgrade (step request_savepoint) of cli run r1, pid 12 on host h,
        since 03:10:04 UTC (12 s ago)``."""
        when = time.strftime("%H:%M:%S UTC", time.gmtime(self.since))
        step = f" (step {self.step})" if self.step else ""
        where = f"DAG run {self.run}" if self.role == "dag" else f"{self.role} run {self.run}"
        return (f"{self.procedure}{step} of {where}, pid {self.pid} on host {self.host}, "
                f"since {when} ({time.time() - self.since:.0f} s ago)")  # fmt: skip


def operation_file(layout: StateLayout, job: str) -> Path:
    return layout.job_dir(job) / "operation.json"


def _locked(layout: StateLayout, job: str) -> AbstractContextManager[None]:
    return file_lock(operation_file(layout, job).with_suffix(".lock"))


def read_operation(layout: StateLayout, job: str) -> OperationLease | None:
    data = read_json(operation_file(layout, job))
    if not isinstance(data, dict):
        return None
    names = {f.name for f in fields(OperationLease)}
    try:
        return OperationLease(**{k: v for k, v in data.items() if k in names})
    except TypeError:  # a record of another layout: nobody holds
        return None


def process_start(pid: int) -> str:
    """The start time of process ``pid`` (clock ticks since boot; ``""``: unknown or gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return ""
    rest = stat.rpartition(")")[2].split()
    if rest[:1] == ["Z"] or len(rest) < 20:  # a zombie has ended
        return ""
    return rest[19]


def holder_alive(lease: OperationLease, now: float | None = None) -> bool:
    """Whether ``lease``'s holder still runs (see the module's doc)."""
    now = time.time() if now is None else now
    if lease.role == "dag" or lease.host != this_host():
        return now - lease.heartbeat_at < lease.ttl
    return lease.pid > 0 and process_start(lease.pid) == lease.started


def holder(job: str, role: str, run: str, procedure: str, *, ttl: float | None = None,
           now: float | None = None) -> OperationLease:  # fmt: skip
    """The lease this process would hold for ``procedure`` on ``job``."""
    now = time.time() if now is None else now
    pid = os.getpid()
    return OperationLease(job=job, role=role, run=run, pid=pid, host=this_host(),
                          started=process_start(pid), procedure=procedure, step="", since=now,
                          heartbeat_at=now,
                          ttl=ttl or (DAG_TTL if role == "dag" else PROCESS_TTL))  # fmt: skip


def try_acquire(layout: StateLayout, me: OperationLease) -> OperationLease:
    """Take ``me.job``'s operation lease for ``me``, or raise :class:`JobBusy` naming the
    live holder. The same run takes it again (a DAG run's next task: its procedure and
    ``since`` are kept); a gone holder's is taken over with a log line."""
    with _locked(layout, me.job):
        current = read_operation(layout, me.job)
        if current is not None and current.same_run(me):
            me = replace(me, procedure=current.procedure, since=current.since)
        elif current is not None and holder_alive(current):
            raise busy(current)
        elif current is not None:
            log.warning("job %s: taking over the operation lease of a holder that is gone: %s",
                        me.job, current.describe())  # fmt: skip
        write_json_atomic(operation_file(layout, me.job), asdict(me))
        return me


def busy(current: OperationLease, waited: float = 0.0) -> JobBusy:
    after = f" (waited {waited:.0f} s)" if waited else ""
    return JobBusy(
        f"job {current.job} is busy{after}: {current.describe()}; nothing was changed. "
        f"Wait for it to end, or queue behind it with --wait SECONDS (--queue on submit and "
        "restore)",
        holder=current,
    )


def acquire(layout: StateLayout, me: OperationLease, *, wait: float = 0.0,
            poll: float = 0.2) -> OperationLease:  # fmt: skip
    """:func:`try_acquire`, retried for up to ``wait`` seconds while the job is busy."""
    deadline = time.monotonic() + wait
    said = False
    while True:
        try:
            return try_acquire(layout, me)
        except JobBusy as exc:
            left = deadline - time.monotonic()
            if left <= 0:
                if wait:
                    raise busy(exc.holder, waited=wait) from None  # type: ignore[arg-type]
                raise
            if not said:
                log.info("job %s is busy: %s; waiting up to %.0f s", me.job,
                         exc.holder.describe(), left)  # type: ignore[union-attr]  # fmt: skip
                said = True
            time.sleep(min(poll, left))


def update(layout: StateLayout, lease: OperationLease, **changes: object) -> OperationLease | None:
    """Renew ``lease`` (heartbeat now, and ``changes``, e.g. its step); ``None`` when the file
    names another run now (it was taken over: the caller lost the job)."""
    with _locked(layout, lease.job):
        current = read_operation(layout, lease.job)
        if current is None or not current.same_run(lease) or current.pid != lease.pid:
            return None
        renewed = replace(current, heartbeat_at=time.time(), **changes)  # type: ignore[arg-type]
        write_json_atomic(operation_file(layout, lease.job), asdict(renewed))
        return renewed


def release(layout: StateLayout, job: str, role: str, run: str) -> bool:
    """Give up ``job``'s operation lease if ``role``/``run`` holds it; whether it did."""
    with _locked(layout, job):
        current = read_operation(layout, job)
        if current is None or (current.role, current.run) != (role, run):
            return False
        operation_file(layout, job).unlink(missing_ok=True)
        return True


def release_run(layout: StateLayout, role: str, run: str) -> list[str]:
    """Give up every job's lease held by ``role``/``run`` (a DAG run that ended); the jobs."""
    return [job for job in layout.known_jobs() if release(layout, job, role, run)]
