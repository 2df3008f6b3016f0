"""Triggers: waits that run in the triggerer instead of holding a worker slot.

:class:`JobHealthyTrigger` polls the job registry (the same observation as
``JobRegistry.wait_healthy``) until the job is healthy, its driver ended, or time runs out,
and fires one event that says which. The registry reads small files and the master's JSON;
each poll runs in a thread so the triggerer's event loop never blocks.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any, NoReturn

from airflow.sdk import BaseOperator
from airflow.triggers.base import BaseTrigger, TriggerEvent

from streamops.exceptions import StreamopsError
from streamops.jobs import ENDED_DRIVER_STATES, JobRegistry, JobView
from streamops.settings import Settings
from streamops_airflow.exceptions import ProcedureFailed


def health_verdict(
    view: JobView, since_driver: str | None, since_live: bool = False
) -> tuple[str, str] | None:
    """``("healthy"|"failed", message)`` once the wait is decided, ``None`` to keep waiting.

    With ``since_driver`` (a driver just started) the job must become healthy on *that*
    driver: a supervised driver that crashes is relaunched under a new id, and a relaunch
    can look healthy for a moment (restored stages are idle until data arrives), so a
    relaunch during the start is a failed start. Another live driver while ``since_driver``
    is live too (``since_live``: the master lists it) is no relaunch but the old version
    handing over after an upgrade's savepoint: keep waiting.
    """
    if since_driver and view.is_live and (
        view.state == "RELAUNCHING"
        or (view.driver_id not in (None, since_driver) and not since_live)
    ):
        error = view.status.get("error") if view.status.get("driver_id") == since_driver else None
        return "failed", (
            f"job {view.name}: driver {since_driver} died during its start and was relaunched"
            f" ({view.driver_id or 'relaunching'}){f': {str(error)[:1500]}' if error else ''}"
        )
    newer = since_driver is None or view.status.get("driver_id") == since_driver
    if view.healthy and newer:
        return "healthy", f"job {view.name} v{view.version} is healthy on driver {view.driver_id}"
    if since_driver and view.status.get("state") == "FAILED" and newer:
        error = str(view.status.get("error"))[:1500]
        return "failed", f"job {view.name} failed on start (driver {since_driver}): {error}"
    if not view.is_live and view.driver_state in ENDED_DRIVER_STATES:
        return "failed", (
            f"job {view.name} did not become healthy: driver {since_driver or view.driver_id} "
            f"ended {view.driver_state}"
        )
    return None


def since_is_live(registry: JobRegistry, view: JobView, since_driver: str | None) -> bool:
    """Whether ``since_driver`` is live while the view shows another driver of the job (the
    old version handing over), for :func:`health_verdict`; asks the master only then."""
    if not since_driver or view.driver_id in (None, since_driver):
        return False
    try:
        return registry.driver_live(since_driver)
    except StreamopsError:  # the master did not answer: judge as before
        return False


def stage_batches(view: JobView) -> str:
    return ", ".join(f"{n}={s.get('batch_id')}" for n, s in view.stages.items()) or "none"


class JobHealthyTrigger(BaseTrigger):
    """Fires ``{"status": "healthy"|"failed"|"timeout", "message", "job", "driver_id"}``."""

    def __init__(
        self, *, job: str, settings: dict[str, Any], timeout: float,
        since_driver: str | None = None, poll_interval: float = 5.0,
        deadline: float | None = None,
    ) -> None:  # fmt: skip
        super().__init__()
        self.job = job
        self.settings = settings
        self.timeout = timeout
        self.since_driver = since_driver
        self.poll_interval = poll_interval
        # wall-clock deadline, fixed at the first deferral so a triggerer restart keeps it
        self.deadline = deadline if deadline is not None else time.time() + timeout

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (
            f"{type(self).__module__}.{type(self).__qualname__}",
            {
                "job": self.job, "settings": self.settings, "timeout": self.timeout,
                "since_driver": self.since_driver, "poll_interval": self.poll_interval,
                "deadline": self.deadline,
            },
        )  # fmt: skip

    async def run(self) -> AsyncIterator[TriggerEvent]:
        registry = JobRegistry(Settings(**self.settings))
        next_log = 0.0
        while True:
            try:
                view = await asyncio.to_thread(registry.view, self.job)
            except StreamopsError as exc:  # the master may be restarting: keep waiting
                self.log.info("job %s: cannot observe it yet (%s)", self.job, exc)
                view = None
            verdict = (
                health_verdict(
                    view, self.since_driver,
                    await asyncio.to_thread(since_is_live, registry, view, self.since_driver),
                )  # fmt: skip
                if view
                else None
            )
            if verdict:
                status, message = verdict
                yield TriggerEvent(self._event(status, message, view))
                return
            if time.time() >= self.deadline:
                state = f"state {view.state}, stages {stage_batches(view)}" if view else "unseen"
                message = f"job {self.job} not healthy after {self.timeout:.0f}s ({state})"
                yield TriggerEvent(self._event("timeout", message, view))
                return
            if view and time.monotonic() >= next_log:
                self.log.info(
                    "waiting for job %s to be healthy: state %s, driver %s, stages %s",
                    self.job, view.state, view.driver_state, stage_batches(view),
                )  # fmt: skip
                next_log = time.monotonic() + 30
            await asyncio.sleep(self.poll_interval)

    def _event(self, status: str, message: str, view: JobView | None) -> dict[str, Any]:
        return {
            "status": status, "message": message, "job": self.job,
            "driver_id": view.driver_id if view else None,
            "version": view.version if view else None,
        }  # fmt: skip


def defer_until_healthy(
    task: BaseOperator, settings: Settings, job: str, *, timeout: float,
    since_driver: str | None = None, poll_interval: float = 5.0,
) -> NoReturn:  # fmt: skip
    """Hand the wait to the triggerer; the task resumes in ``execute_complete(context, event)``."""
    task.log.info("deferring: waiting up to %.0fs for job %s to be healthy", timeout, job)
    task.defer(
        trigger=JobHealthyTrigger(
            job=job, settings=settings.model_dump(mode="json"), timeout=timeout,
            since_driver=since_driver, poll_interval=poll_interval,
        ),
        method_name="execute_complete",
        timeout=timedelta(seconds=timeout + 120),
    )  # fmt: skip
    raise AssertionError("defer() returned")  # pragma: no cover - defer always raises


def health_outcome(
    event: dict[str, Any], error: type[Exception] = ProcedureFailed
) -> str | None:
    """The healthy driver's id from a :class:`JobHealthyTrigger` event, else raise ``error``."""
    if event.get("status") != "healthy":
        raise error(str(event.get("message")))
    return event.get("driver_id")
