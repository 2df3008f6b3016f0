"""What the procedure DAGs' tasks share: each runs, or polls, one step of a procedure of the
ops library (:mod:`streamops.procedures.upgrade_steps`,
:mod:`streamops.procedures.savepoint_restart`), the steps
the CLI runs in a loop, for the DAG run that owns the procedure's intent (a retried task
resumes from it). A task holds no logic of its own."""

from __future__ import annotations

from collections.abc import Sequence
from types import ModuleType
from typing import Any

from airflow.sdk import BaseSensorOperator, Context

from streamops_airflow.exceptions import ProcedureFailed


def call_step(
    procedure: ModuleType, step: str, owner: str, job: str, *args: Any,
    fatal: tuple[type[Exception], ...] = (), **kwargs: Any,
) -> Any:  # fmt: skip
    """Run ``procedure.step(settings, job, owner, ...)``; an error of ``fatal`` fails the
    task with its reason, without a retry."""
    from streamops_airflow.hooks import ops_settings

    try:
        return getattr(procedure, step)(ops_settings(), job, owner, *args, **kwargs)
    except fatal as exc:
        raise ProcedureFailed(str(exc)) from exc


class StepSensor(BaseSensorOperator):
    """Poll step ``step`` (one that answers whether it is done, e.g. ``savepoint_answered``)
    on ``job`` until it is; :meth:`run_step` says how the procedure's steps are run."""

    template_fields: Sequence[str] = ("job",)

    def __init__(self, *, step: str, job: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.step = step
        self.job = job

    def run_step(self) -> Any:
        raise NotImplementedError

    def poke(self, context: Context) -> bool:
        return bool(self.run_step())
