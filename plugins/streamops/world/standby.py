"""Warm standby, ops side: start a job's next version before the running one stops.

``start_standby`` submits the new version with ``--standby TOKEN`` beside the running one
(the driver builds and validates its stages, then waits; see ``spark_jobs/runtime/standby.py``)
and waits for its ready file. ``release_standby`` prepares the checkpoints from a savepoint and
writes the go file; ``abort_standby`` kills a standby that will not be used. ``standby_fits``
tells whether a standby's driver can start beside the running version now (an upgrade's
``auto`` mode, ``wants_standby``).
"""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

from streamops.cluster.client import executor_room, free_cores
from streamops.cluster.submission import submit_hot_standby
from streamops.exceptions import JobError
from streamops.job_reads import read_submissions
from streamops.job_view import ENDED_DRIVER_STATES
from streamops.jobs import JobRegistry
from streamops.settings import Settings
from streamops.spec import JobSpec, spec_from_dict
from streamops.state.layout import read_json, write_json_atomic
from streamops.state.savepoints import catalogue
from streamops.timeouts import STANDBY_TIMEOUT
from streamops.world.restore import clear_stale_checkpoint, prepare_checkpoints, restore_plan
from streamops.world.submit import submit_job

log = logging.getLogger("streamops.world.standby")


STANDBY_MODES = ("auto", "warm", "cold")  # an upgrade's choice: auto = warm if it fits
READY_SUMMARY = ("app_id", "executors", "warm_up_s", "armed_s")  # what Standby.to_dict keeps


@dataclass(frozen=True)
class Standby:
    job: str
    version: str
    token: str
    driver_id: str
    ready: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready, for an Airflow task to hand to the next ones: of the ready file only its
        executors, application and timings (the stage descriptions stay in the file)."""
        summary = {k: self.ready[k] for k in READY_SUMMARY if k in self.ready}
        return {**asdict(self), "ready": summary}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Standby:
        return cls(str(data["job"]), str(data["version"]), str(data["token"]),
                   str(data["driver_id"]), dict(data.get("ready") or {}))  # fmt: skip


def start_standby(
    spec: JobSpec, settings: Settings, *, timeout: float = STANDBY_TIMEOUT,
    new_stages: Iterable[str] = (),
) -> Standby:
    """Submit ``spec`` as a warm standby next to the live job; return once it is ready.

    ``new_stages`` (stages the running version lacks) lose any stale checkpoint first: the
    standby arms its queries on the job's checkpoints."""
    for stage in new_stages:
        clear_stale_checkpoint(settings, spec.name, stage)
    token = f"{time.strftime('%Y%m%dT%H%M%S')}-{secrets.token_hex(3)}"
    registry = JobRegistry(settings)
    executors = standby_executors(registry, spec)
    driver = submit_job(
        spec, settings, extra_args=("--standby", token, "--standby-executors", str(executors)),
        standby=token,
    )  # fmt: skip
    ready_file = settings.layout.standby_ready_file(spec.name, token)
    deadline = time.monotonic() + timeout
    log.info("job %s: standby v%s submitted as %s; waiting until it is ready", spec.name,
             spec.version, driver)  # fmt: skip
    while True:
        ready = read_json(ready_file)
        if ready:
            log.info(
                "job %s: standby v%s ready on %s (warm-up %ss, armed in %ss)", spec.name,
                spec.version, driver, ready.get("warm_up_s"), ready.get("armed_s"),
            )  # fmt: skip
            return Standby(spec.name, spec.version, token, driver, ready)
        failed = read_json(settings.layout.standby_failed_file(spec.name, token))
        if failed:  # kill it: supervised, it would be relaunched and fail again
            abort_standby(settings, Standby(spec.name, spec.version, token, driver, {}))
            raise JobError(
                f"standby v{spec.version} of {spec.name} failed before it was ready: "
                f"{failed.get('error')}"
            )
        state = registry.client.submission_status(driver).driver_state
        if state in ENDED_DRIVER_STATES:
            view = registry.view(spec.name)
            raise JobError(
                f"standby v{spec.version} of {spec.name} ended {state} before it was ready. "
                f"{registry.failure_detail(view, driver)}"
            )
        if time.monotonic() > deadline:
            abort_standby(settings, Standby(spec.name, spec.version, token, driver, {}))
            raise JobError(f"standby v{spec.version} of {spec.name} not ready after {timeout:.0f}s")
        time.sleep(0.5)


def standby_executors(registry: JobRegistry, spec: JobSpec) -> int:
    """How many executors a standby of ``spec`` can get beside the running version now (it
    waits for them and warms them up); 0 (with a warning) when the cluster has no free cores,
    so the gap will include starting executors once the old version has freed its cores."""
    res, cores = spec.resources, spec.executor_cores  # one a hot job's executor
    workers = registry.client.workers()
    free = free_cores(workers)
    wanted = res.max_cores // cores
    count = min(wanted, executor_room(workers, cores, res.driver_cores))
    if count < wanted:
        log.warning("job %s: the cluster has %d free cores; the standby's driver takes %d and "
                    "gets %d of its %d executors now, the rest once the old version stops "
                    "(the upgrade gap then includes their start-up)", spec.name, free,
                    res.driver_cores, count, wanted)  # fmt: skip
    return count


def wants_standby(registry: JobRegistry, spec: JobSpec, mode: str) -> bool:
    """Whether an upgrade to ``spec`` in ``mode`` (one of ``STANDBY_MODES``) starts a warm
    standby: ``warm`` always, ``cold`` never, ``auto`` when its driver fits now."""
    if mode not in STANDBY_MODES:
        raise ValueError(f"standby mode {mode!r} is not one of {', '.join(STANDBY_MODES)}")
    if mode == "auto":
        fits = standby_fits(registry, spec)
        log.info("job %s: %s", spec.name, "a worker has a free core: warm standby" if fits else
                 "no worker has a free core for a standby driver: cold start")  # fmt: skip
        return fits
    return mode == "warm"


def standby_fits(registry: JobRegistry, spec: JobSpec) -> bool:
    """Whether one ALIVE worker has the free cores for a standby driver of ``spec`` now (its
    executors may come later: see ``standby_executors``). Without them a submitted standby
    would wait for cores that only stopping the running version frees."""
    need = spec.resources.driver_cores
    return any(
        w.cores - w.coresused >= need for w in registry.client.workers() if w.state == "ALIVE"
    )


def released(settings: Settings, standby: Standby) -> bool:
    """Whether ``standby`` was released already (its go file is written)."""
    return settings.layout.standby_go_file(standby.job, standby.token).is_file()


def handover_fits(registry: JobRegistry, spec: JobSpec, standby: Standby | None = None) -> bool:
    """Whether the cluster's free cores hold what ``spec``'s version still needs to run beside
    the old driver idling after its handover: its driver and executors, or, for a warm
    ``standby``, the executors it did not get. If not, the old driver must shut down at once
    (no handover): it would otherwise hold the cores the new version waits for."""
    res, cores = spec.resources, spec.executor_cores  # one a hot job's executor
    wanted = res.max_cores // cores
    driver = res.driver_cores
    if standby is not None:
        wanted -= int(standby.ready.get("executors") or 0)
        driver = 0
    workers = registry.client.workers()
    room = executor_room(workers, cores, driver)
    fits = room >= wanted and (driver == 0 or standby_fits(registry, spec))
    if not fits:
        log.info("job %s: %d free core(s), room for %d of the %d executor(s) of %d core(s) "
                 "v%s still needs%s: the old driver shuts down at once (no handover)",
                 spec.name, free_cores(workers), room, wanted, cores, spec.version,
                 " beside its driver" if driver else "")  # fmt: skip
    return fits


def release_standby(
    settings: Settings, standby: Standby, savepoint: str, stages: Iterable[str]
) -> None:
    """Restore the checkpoints from ``savepoint`` and let the standby driver start."""
    manifest = catalogue.get_savepoint(settings.layout, savepoint, job=standby.job)
    plan = restore_plan(manifest, stages)
    log.info("%s", plan.render())
    prepare_checkpoints(settings, standby.job, plan)
    write_json_atomic(
        settings.layout.standby_go_file(standby.job, standby.token),
        {"savepoint": savepoint, "positions": plan.positions, "at": time.time()},
    )
    log.info("job %s: standby %s released from savepoint %s", standby.job, standby.driver_id,
             savepoint)  # fmt: skip
    spec = submitted_spec(settings, standby.job, standby.driver_id)
    if spec is not None and spec.standby == "hot":  # the new version's own hot standby
        submit_hot_standby(spec, settings)


def submitted_spec(settings: Settings, job: str, driver_id: str) -> JobSpec | None:
    """The spec ``driver_id`` was submitted with (from the job's submissions)."""
    for sub in read_submissions(settings.layout.submissions_file(job)):
        if sub.get("driver_id") == driver_id and sub.get("spec"):
            return spec_from_dict(sub["spec"], f"submission {driver_id}")
    return None


def abort_standby(settings: Settings, standby: Standby) -> None:
    """Kill a standby driver (it holds no lease and has written nothing). The abort is
    written first: a relaunch of it under another id exits on its own."""
    registry = JobRegistry(settings)
    log.warning("job %s: aborting standby %s", standby.job, standby.driver_id)
    write_json_atomic(settings.layout.standby_aborted_file(standby.job, standby.token),
                      {"driver_id": standby.driver_id, "at": time.time()})  # fmt: skip
    registry.client.kill_submission(standby.driver_id)
