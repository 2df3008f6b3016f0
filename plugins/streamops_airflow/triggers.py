"""Triggers: waits that run in the triggerer instead of holding a worker slot.

:class:`JobHealthyTrigger` observes the job as ``JobRegistry.wait_healthy`` does
(``JobRegistry.observe``) and asks the same judge (``streamops.verdict.health_verdict``)
until the job is healthy, its start failed, or time runs out, and fires one event that says
which. The registry reads small files and the master's JSON; each poll runs in a thread so
the triggerer's event loop never blocks.
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
from streamops.job_view import JobView
from streamops.jobs import JobRegistry
from streamops.settings import Settings
from streamops.verdict import Observation, Outcome, health_verdict, timed_out
from streamops_airflow.exceptions import ProcedureFailed


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
            seen = await asyncio.to_thread(self._observe, registry)
            view = seen.view if seen else None
            verdict = health_verdict(seen) if seen else None
            if view and verdict and verdict.decided:  # the event's status: healthy or failed
                message = verdict.message
                if verdict.outcome is Outcome.FAILED:  # the driver's log may say more
                    message = await asyncio.to_thread(
                        registry.failure_message, message, view, self.since_driver
                    )
                yield TriggerEvent(self._event(verdict.outcome.value, message, view))
                return
            if time.time() >= self.deadline:
                message = timed_out(self.job, self.timeout, view)
                yield TriggerEvent(self._event("timeout", message, view))
                return
            if verdict and time.monotonic() >= next_log:
                self.log.info("%s", verdict.message)
                next_log = time.monotonic() + 30
            await asyncio.sleep(self.poll_interval)

    def _observe(self, registry: JobRegistry) -> Observation | None:
        try:
            return registry.observe(self.job, self.since_driver)
        except StreamopsError as exc:  # the master may be restarting: keep waiting
            self.log.info("job %s: cannot observe it yet (%s)", self.job, exc)
            return None

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
