"""The driver's side of the control protocol: savepoint and stop at a batch boundary.

Polled by the supervising loop of :class:`RunningJob` between checks of its queries, so
requests are handled one at a time on one thread. A savepoint of a job that goes on does not
pause it: each stage is copied as its last committed batch left it (files of later batches
are left out, :mod:`streamops_contract.state.checkpoint_cut`). A stop, or a savepoint with
``cancel``, pauses the sources and drains every stage to a batch boundary first, then stops the
queries only after the savepoint is written and verified. A failed savepoint leaves the job running.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any, Literal

from spark_jobs.runtime.protocols import RunningJob
from spark_jobs.runtime.savepointing import drain, stage_entry
from streamops_contract.state import control
from streamops_contract.state.checkpoint_cut import last_batch
from streamops_contract.state.job_status import read_status
from streamops_contract.state.savepoints.create import create_savepoint
from streamops_contract.state.savepoints.manifest import Manifest

log = logging.getLogger("spark_jobs.control")
DRAIN_TIMEOUT = 120.0
HANDOVER_WAIT_S = 60.0  # the longest a stopped driver waits for its successor to run


class ControlLoop:
    def __init__(self, ctx: RunningJob) -> None:
        self.ctx = ctx

    def poll(self, queries: dict[str, Any]) -> Literal["exit"] | None:
        """Handle pending requests; ``"exit"`` when the job has been stopped by one."""
        ctx = self.ctx
        for request in control.pending_requests(ctx.layout, ctx.job):
            if request.expired:
                self._answer(request, False, "request expired before the driver saw it")
                continue
            held = ctx.lease
            if held is not None and request.created_at < held.acquired_at:
                # meant for a driver that died (a relaunch or a hot standby took over): its
                # sender gave up; a savepoint with cancel acted on now would stop the job
                self._answer(request, False, (
                    f"sent to a previous driver of job {ctx.job}, before driver {held.holder} "
                    f"took the job over ({held.acquired_at - request.created_at:.1f}s later); "
                    "not acted on: send it again"
                ))  # fmt: skip
                continue
            log.info("control: %s request %s", request.kind, request.id)
            if self._handle(request, queries):
                return "exit"
        return None

    def _answer(
        self, request: control.ControlRequest, ok: bool, message: str,
        detail: dict[str, Any] | None = None,
    ) -> None:  # fmt: skip
        control.write_result(self.ctx.layout, self.ctx.job, request, ok=ok, message=message,
                             detail=detail)  # fmt: skip

    def _handle(self, request: control.ControlRequest, queries: dict[str, Any]) -> bool:
        ctx = self.ctx
        stopping = request.kind == "stop" or request.cancel
        pause = ctx.layout.pause_file(ctx.job)
        started = time.monotonic()
        try:
            checkpoints = {name: Path(ctx.checkpoint_for(name)) for name in queries}
            if stopping:
                pause.parent.mkdir(parents=True, exist_ok=True)
                pause.touch()
                batches = drain(queries, checkpoints, DRAIN_TIMEOUT)
                log.info("control: stages drained at batches %s in %.1fs", batches,
                         time.monotonic() - started)  # fmt: skip
            else:  # the job goes on: copy each stage as its last committed batch left it
                batches = {name: last_batch(path / "commits") for name, path in checkpoints.items()}
                log.info("control: live savepoint at committed batches %s", batches)
            detail: dict[str, Any] = {"batches": batches}
            if request.kind == "savepoint":
                manifest = self._savepoint(request, checkpoints, batches)
                detail.update(savepoint=manifest.name, bytes=manifest.bytes)
            detail["duration_s"] = round(time.monotonic() - started, 3)
            if stopping:
                for q in queries.values():
                    q.stop()
                ctx.board.set_state("STOPPED", stopped_at=time.time(), stopped_by=request.id,
                                    savepoint=detail.get("savepoint"))  # fmt: skip
                # nothing more is written: the next version (a warm standby waiting on this
                # answer, or one started now) may take the lease at once instead of after this
                # JVM has exited
                ctx.release_lease()
                ctx.board.seal()
                detail["handover"] = request.handover  # the requester knows whether to wait
                self._answer(request, True, "job stopped at a batch boundary", detail)
                if request.handover:
                    self._await_successor()
                return True
            self._answer(request, True, "savepoint written; job goes on", detail)
            return False
        except control.Withdrawn as exc:  # its sender answered it already: nothing published
            log.warning("control: %s", exc)
            return False
        except Exception as exc:  # the job keeps running; the requester gets the reason
            log.exception("control: %s %s failed", request.kind, request.id)
            self._answer(request, False, str(exc)[:2000])
            return False
        finally:
            pause.unlink(missing_ok=True)

    def _claim(self, request: control.ControlRequest) -> None:
        """Claim ``request`` before publishing its savepoint: a sender that saw this driver
        go away (a node killed while it copied: its Python may outlive its JVM a moment) may
        have withdrawn it, and then nothing is published, as the sender said."""
        driver = self.ctx.board.snapshot().driver_id
        if not control.claim(self.ctx.layout, self.ctx.job, request, f"driver {driver}"):
            raise control.Withdrawn(f"{request.kind} {request.id} was withdrawn by its sender "
                                    "before it was published: nothing published")  # fmt: skip

    def _await_successor(self, wait_s: float = HANDOVER_WAIT_S) -> None:
        """Stay idle (queries stopped, lease given up) until another driver of the job runs
        every stage, or ``wait_s`` passed: this JVM's and its executors' teardown then does
        not compete with the successor's first batches for the cluster's cores."""
        ctx = self.ctx
        mine = ctx.board.snapshot().driver_id
        started = time.monotonic()
        while time.monotonic() - started < wait_s:
            status = read_status(ctx.layout, ctx.job)
            if status.driver_id != mine and status.state not in (None, "STARTING"):
                log.info("control: the next driver %s runs (%s) after %.1fs; shutting down",
                         status.driver_id, status.state,
                         time.monotonic() - started)  # fmt: skip
                return
            time.sleep(0.2)
        log.info("control: no successor running after %.0fs; shutting down", wait_s)

    def _savepoint(
        self, request: control.ControlRequest, checkpoints: dict[str, Path],
        batches: dict[str, int | None],
    ) -> Manifest:  # fmt: skip
        ctx = self.ctx
        stages = {s.name: s for s in ctx.stages}
        entries = {
            name: stage_entry(
                ctx.spark,
                checkpoints[name],
                batches[name],
                stages[name].stateful,
                ctx.describe(name),
            )  # fmt: skip
            for name in checkpoints
        }
        manifest = create_savepoint(
            ctx.layout, str(request.name), job=ctx.job, version=ctx.spec.version,
            stage_dirs=checkpoints, stage_entries=entries,
            created_by=ctx.board.snapshot().driver_id, cancel=request.cancel,
            from_savepoint=ctx.from_savepoint,
            # sha256 always: it is taken from the bytes as they are copied, at about no cost
            # beyond the copy (docs/performance.md), and a restore checks it
            checksum="sha256",
            code=Path(ctx.spec.code).name if ctx.spec.code else None,
            before_publish=lambda: self._claim(request),
        )  # fmt: skip
        log.info("control: savepoint %s written (%s bytes, %s stages)", manifest.name,
                 manifest.bytes, len(manifest.stages))  # fmt: skip
        return manifest
