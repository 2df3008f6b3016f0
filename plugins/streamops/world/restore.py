"""Starting a job version from a savepoint (taking one is
:mod:`streamops.procedures.savepoint_taking`).

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
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from streamops.cluster.client import MasterClient
from streamops.exceptions import JobAlreadyRunning
from streamops.jobs import JobRegistry
from streamops.settings import Settings
from streamops.spec import JobSpec
from streamops.state.savepoints import catalogue
from streamops.state.savepoints.restore import restore_stages
from streamops.timeouts import HEALTH_TIMEOUT, STOP_TIMEOUT
from streamops_contract.state.checkpoint_cut import last_batch
from streamops_contract.state.savepoints.manifest import Manifest

log = logging.getLogger("streamops.world.restore")


def earliest_positions(manifest: Manifest) -> dict[str, dict[str, Any]]:
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


def restore_plan(manifest: Manifest, new_stages: Iterable[str]) -> RestorePlan:
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
    if plan.restored:  # every stage checked before any checkpoint is replaced
        dests = {stage: layout.checkpoint(job, stage) for stage in plan.restored}
        restore_stages(layout, plan.savepoint, dests)
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
    wait_healthy: float | None = HEALTH_TIMEOUT, replacing: str | None = None,
    client: MasterClient | None = None,
) -> str:  # fmt: skip
    """Restore ``spec``'s stages from ``savepoint`` by name and submit it; the driver id.

    Refused, with every checkpoint untouched, while the job has a live driver (but
    ``replacing``: the driver the savepoint was taken from with cancel, if it may still be
    shutting down; it has given up the job's lease: the new driver takes it at once)."""
    from streamops.world.submit import submit_job

    refuse_live_job(JobRegistry(settings, client), spec.name, replacing=replacing)
    manifest = catalogue.get_savepoint(settings.layout, savepoint, job=spec.name)
    plan = restore_plan(manifest, stages)
    log.info("%s", plan.render())
    prepare_checkpoints(settings, spec.name, plan)
    token = base64.urlsafe_b64encode(json.dumps(plan.positions).encode()).decode()
    extra = ("--from-savepoint", savepoint, "--start-positions-b64", token)
    return submit_job(spec, settings, wait_healthy=wait_healthy, extra_args=extra,
                      replacing=replacing, client=client)  # fmt: skip


def refuse_live_job(registry: JobRegistry, job: str, *, replacing: str | None = None) -> None:
    """A restore replaces the checkpoints a live driver reads and writes: refuse it."""
    live = registry.view(job)
    if live.is_live and not (replacing and live.driver_id == replacing):
        raise JobAlreadyRunning(
            f"restore of job {job} refused: it is running (driver {live.driver_id or '?'}, "
            f"state {live.state}); its checkpoints are untouched. To take a running job to "
            f"another version use `streamops upgrade {job} <spec>`; to restore anyway, stop "
            f"it first with `streamops cancel {job}`"
        )


def restore_version(
    settings: Settings, spec: JobSpec, savepoint: str, *, stop: Iterable[str | None] = (),
    wait_healthy: float = HEALTH_TIMEOUT,
) -> str:  # fmt: skip
    """Stop whatever runs under ``spec``'s job (and the drivers in ``stop``: an upgrade's new
    version, its standby, the old driver still waiting to hand over) and start ``spec`` from
    ``savepoint`` with every stage it holds (an upgrade's rollback); the driver id."""
    job, registry = spec.name, JobRegistry(settings)
    for driver in filter(None, stop):
        if registry.driver_live(driver):
            log.warning("job %s: stopping driver %s", job, driver)
            registry.kill_driver(job, driver)
            registry.wait_driver_ended(job, driver, STOP_TIMEOUT)
    if registry.view(job).is_live:
        registry.cancel(job)
    stages = list(catalogue.get_savepoint(settings.layout, savepoint).stages)
    log.warning("job %s: starting v%s again from savepoint %s", job, spec.version, savepoint)
    return start_from_savepoint(spec, settings, savepoint, stages, wait_healthy=wait_healthy)
