"""Savepoints of running jobs, and starting a job version from a savepoint.

``savepoint_job`` asks the driver (control protocol) to drain its stages to a batch boundary
and copy their checkpoints; with ``cancel`` the job stops only after the copy is verified.
``start_from_savepoint`` matches the new version's stages with the savepoint's by name:
restored stages get the savepoint's checkpoint, new stages start empty at the savepoint's
source positions (the earliest, where stages sit at different positions of one source), and
stages missing from the new version are reported and left in the savepoint.
"""

from __future__ import annotations

import base64
import json
import logging
import shutil
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from streamops import control, savepoints
from streamops.checkpoint_cut import last_batch
from streamops.exceptions import ClusterNotRunning, JobError, JobNotFound
from streamops.jobs import JobRegistry
from streamops.settings import Settings
from streamops.spec import JobSpec

log = logging.getLogger("streamops.restore")


def savepoint_job(
    settings: Settings, job: str, name: str, *, cancel: bool = False, timeout: float = 180.0,
    wait_stopped: bool = True, handover: bool = False,
) -> control.ControlResult:  # fmt: skip
    """Take savepoint ``name`` of the running ``job``; with ``cancel``, stop it afterwards.

    With ``cancel`` the driver has stopped its queries and given up its lease when this
    returns; ``wait_stopped`` also waits for its process to end. ``handover`` (with
    ``cancel``, an upgrade): the driver is told a new version takes over, and it shuts down
    only once that version runs.
    """
    registry = JobRegistry(settings)
    view = registry.view(job)
    if not view.is_live:
        raise JobNotFound(f"job {job} is not running (state {view.state}); nothing to savepoint")
    request = control.send_request(
        settings.layout, job, "savepoint", name=name, cancel=cancel, timeout=timeout,
        handover=handover,
    )  # fmt: skip

    def same_driver() -> bool:  # a relaunched driver is another run: its answer never comes
        now = registry.view(job)
        return now.is_live and now.status.get("app_id") == view.status.get("app_id")

    try:
        result = control.wait_result(settings.layout, job, request, still_alive=same_driver)
    except (control.DriverGone, ClusterNotRunning) as exc:
        raise control.DriverGone(_no_savepoint(settings, job, name, exc)) from exc
    log.info("job %s: savepoint %s taken in %ss (batches %s)", job, name,
             result.detail.get("duration_s"), result.detail.get("batches"))  # fmt: skip
    if cancel and wait_stopped:
        wait_driver_ended(settings, job, view.driver_id)
        log.info("job %s stopped after savepoint %s", job, name)
    return result


def _no_savepoint(settings: Settings, job: str, name: str, cause: Exception) -> str:
    """What happened to a savepoint whose driver went away, what was kept, and what now."""
    published = settings.layout.savepoint(name).is_dir()  # published whole or not at all
    kept = f"savepoint {name} was published before" if published else "nothing was kept"
    if isinstance(cause, ClusterNotRunning):
        return (
            f"job {job}: the master stopped answering during savepoint {name} ({cause}); "
            f"{kept}; whether the driver runs on is unknown (streamops health tells)"
        )
    try:
        now = JobRegistry(settings).view(job)
    except ClusterNotRunning:
        now = None
    if now is not None and now.is_live:
        after = "the job is being relaunched from its checkpoint"
    else:
        after = f"the job is not running (state {now.state if now else 'unknown'})"
    return f"job {job}: the driver died during savepoint {name}; {kept}; {after}"


def wait_driver_ended(
    settings: Settings, job: str, driver_id: str | None, timeout: float = 60.0
) -> None:
    """Wait until ``driver_id`` (else any driver of ``job``) is no longer live on the master;
    a warm standby of the job may be live beside it."""
    registry = JobRegistry(settings)
    deadline = time.monotonic() + timeout
    while registry.driver_live(driver_id) if driver_id else registry.view(job).is_live:
        if time.monotonic() > deadline:
            raise JobError(f"job {job}: driver {driver_id} still running {timeout:.0f}s after "
                           "it was told to stop")  # fmt: skip
        time.sleep(0.2)


def earliest_positions(manifest: savepoints.Manifest) -> dict[str, dict[str, Any]]:
    """Per source id, the earliest committed offset over every stage of the savepoint."""
    out: dict[str, dict[str, Any]] = {}
    for entry in manifest.stages.values():
        for offset in entry.sources:
            sid = offset.get("source")
            if not sid:
                continue
            if sid not in out or _position_key(offset) < _position_key(out[sid]):
                out[sid] = offset
    return out


def _position_key(offset: dict[str, Any]) -> tuple[Any, ...]:
    if "sequence" in offset:
        return (int(offset["sequence"]),)
    if "file" in offset:
        return (str(offset["file"]),)
    return (json.dumps(offset, sort_keys=True),)


@dataclass(frozen=True)
class RestorePlan:
    """What a start from a savepoint does with each stage."""

    savepoint: str
    restored: tuple[str, ...]
    new: tuple[str, ...]
    dropped: tuple[str, ...]
    positions: dict[str, dict[str, Any]]

    def render(self) -> str:
        lines = [f"start from savepoint {self.savepoint}:"]
        lines += [f"  RESTORED  {s}" for s in self.restored]
        lines += [f"  NEW       {s} (empty state, sources from the savepoint)" for s in self.new]
        lines += [f"  DROPPED   {s} (state ignored, kept in the savepoint)" for s in self.dropped]
        lines += [f"  position  {sid}: {json.dumps(o)}" for sid, o in self.positions.items()]
        return "\n".join(lines)


def restore_plan(manifest: savepoints.Manifest, new_stages: Iterable[str]) -> RestorePlan:
    new = list(new_stages)
    return RestorePlan(
        savepoint=manifest.name,
        restored=tuple(s for s in new if s in manifest.stages),
        new=tuple(s for s in new if s not in manifest.stages),
        dropped=tuple(s for s in manifest.stages if s not in new),
        positions=earliest_positions(manifest),
    )


def prepare_checkpoints(settings: Settings, job: str, plan: RestorePlan) -> None:
    """Make the job's checkpoints what ``plan`` says, before its driver reads them. A new
    stage's checkpoint that holds no batch is kept: a warm standby's armed query made it."""
    layout = settings.layout
    for stage in plan.restored:
        savepoints.restore_stage(layout, plan.savepoint, stage, layout.checkpoint(job, stage))
    for stage in plan.new:
        clear_stale_checkpoint(settings, job, stage, keep_empty=True)


def clear_stale_checkpoint(
    settings: Settings, job: str, stage: str, *, keep_empty: bool = False
) -> None:
    """Remove the checkpoint a stage new in this version finds (left by an older version that
    had a stage of that name, or by an aborted start); with ``keep_empty``, one without any
    batch stays."""
    stale = settings.layout.checkpoint(job, stage)
    if not stale.exists():
        return
    if keep_empty and last_batch(stale / "offsets") is None:
        return
    log.info("removing stale checkpoint of new stage %s: %s", stage, stale)
    shutil.rmtree(stale)


def start_from_savepoint(
    spec: JobSpec, settings: Settings, savepoint: str, stages: Iterable[str], *,
    wait_healthy: float | None = 300.0, replacing: str | None = None,
) -> str:  # fmt: skip
    """Restore ``spec``'s stages from ``savepoint`` by name and submit it; the driver id.

    ``replacing``: the driver the savepoint was taken from with cancel, if it may still be
    shutting down (it has given up the job's lease: the new driver takes it at once)."""
    from streamops.submit import submit_job

    manifest = savepoints.get_savepoint(settings.layout, savepoint, job=spec.name)
    plan = restore_plan(manifest, stages)
    log.info("%s", plan.render())
    prepare_checkpoints(settings, spec.name, plan)
    token = base64.urlsafe_b64encode(json.dumps(plan.positions).encode()).decode()
    extra = ("--from-savepoint", savepoint, "--start-positions-b64", token)
    return submit_job(
        spec, settings, wait_healthy=wait_healthy, extra_args=extra, replacing=replacing
    )
