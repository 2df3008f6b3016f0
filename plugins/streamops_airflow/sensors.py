"""Sensors: wait for a job to be healthy.

:class:`JobHealthySensor` can defer (``deferrable=True``) to :class:`JobHealthyTrigger`: a job
takes a minute or more to become healthy and the wait should not hold a worker slot. The
savepoint answer comes within seconds of a batch boundary: the procedures poll their own
steps for it (:class:`streamops_airflow.procedure_tasks.StepSensor`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from airflow.sdk import BaseSensorOperator, Context, PokeReturnValue

from streamops.timeouts import HEALTH_TIMEOUT
from streamops.verdict import Outcome, health_verdict
from streamops_airflow.exceptions import ProcedureFailed
from streamops_airflow.hooks import SparkStandaloneHook
from streamops_airflow.triggers import defer_until_healthy, health_outcome


def _optional(value: Any) -> str | None:
    """A templated driver id: empty, ``None`` or ``"None"`` mean "any driver"."""
    return None if value in (None, "", "None") else str(value)


class JobHealthySensor(BaseSensorOperator):
    """Wait until ``job`` is healthy (every stage ready), optionally a run of ``since_driver``.

    Fails at once (no more poking) when the job's driver ends or the job fails on start.
    Returns the healthy driver's id.
    """

    template_fields: Sequence[str] = ("job", "since_driver")

    def __init__(
        self, *, job: str, since_driver: str | None = None,
        spark_standalone_conn_id: str = SparkStandaloneHook.default_conn_name,
        deferrable: bool = False, poke_interval: float = 5.0, timeout: float = HEALTH_TIMEOUT,
        **kwargs: Any,
    ) -> None:  # fmt: skip
        super().__init__(poke_interval=poke_interval, timeout=timeout, **kwargs)
        self.job = job
        self.since_driver = since_driver
        self.spark_standalone_conn_id = spark_standalone_conn_id
        self.deferrable = deferrable

    def execute(self, context: Context) -> Any:
        if self.deferrable:
            hook = SparkStandaloneHook(self.spark_standalone_conn_id)
            defer_until_healthy(self, hook.settings, self.job, timeout=float(self.timeout),
                                since_driver=_optional(self.since_driver),
                                poll_interval=float(self.poke_interval))  # fmt: skip
        return super().execute(context)

    def poke(self, context: Context) -> bool | PokeReturnValue:
        hook = SparkStandaloneHook(self.spark_standalone_conn_id)
        since = _optional(self.since_driver)
        seen = hook.registry.observe(self.job, since)
        verdict = health_verdict(seen)
        if verdict.outcome is Outcome.WAITING:
            self.log.info("%s", verdict.message)
            return False
        if verdict.outcome is Outcome.FAILED:
            raise ProcedureFailed(hook.registry.failure_message(verdict.message, seen.view, since))
        self.log.info("%s", verdict.message)
        return PokeReturnValue(is_done=True, xcom_value=seen.view.driver_id)

    def execute_complete(self, context: Context, event: dict[str, Any]) -> str | None:
        return health_outcome(event)
