"""The Airflow adapter of the procedure kit: a DAG's tasks and sensors are the procedures'
step *functions* (``upgrade_steps.request_savepoint``, ``savepoint_restart.job_stopped``,
``cluster_restart.stop_cluster`` ...), the ones the CLI runs through the step runner
(:mod:`streamops.procedures.step_runner`). A task holds no logic of its own: it calls its
step with the operations port of the task's settings
(:func:`streamops_airflow.hooks.ops_operations`) and, for a job's procedure, this DAG run as
the owner of the intent (a retried task resumes from it). A reader (or a tool) follows a task
to its code by the function it names.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from airflow.sdk import BaseSensorOperator, Context

from streamops_airflow.exceptions import ProcedureFailed

Step = Callable[..., Any]


def run_owner(context: Context | dict[str, Any]) -> str:
    """Who owns an intent record: the DAG run (a retried task of the same run resumes)."""
    ti = context["ti"]
    return f"airflow:{ti.dag_id}/{ti.run_id}"


def this_run() -> str:
    """The owner of the intents of the running task's DAG run."""
    from airflow.sdk import get_current_context

    return run_owner(get_current_context())


def run_step(step: Step, *args: Any, fatal: tuple[type[Exception], ...] = (),
             **kwargs: Any) -> Any:  # fmt: skip
    """``step(ops, *args, **kwargs)`` with this task's operations port; an error of
    ``fatal`` fails the task with its reason, without a retry."""
    from streamops_airflow import hooks

    try:
        return step(hooks.ops_operations(), *args, **kwargs)
    except fatal as exc:
        raise ProcedureFailed(str(exc)) from exc


def job_step(step: Step, job: str, *args: Any, fatal: tuple[type[Exception], ...] = (),
             **kwargs: Any) -> Any:  # fmt: skip
    """``step(ops, job, owner, ...)``: a step of a job's procedure, for this DAG run."""
    return run_step(step, job, this_run(), *args, fatal=fatal, **kwargs)


class StepSensor(BaseSensorOperator):
    """Poll ``step`` (a step that answers whether it is done, e.g.
    ``upgrade_steps.savepoint_answered``) on ``job`` for this DAG run until it is; an error
    of ``fatal`` fails the task without a retry."""

    template_fields: Sequence[str] = ("job",)

    def __init__(self, *, step: Step, job: str, fatal: tuple[type[Exception], ...] = (),
                 **kwargs: Any) -> None:  # fmt: skip
        super().__init__(**kwargs)
        self.step = step
        self.job = job
        self.fatal = fatal

    def poke(self, context: Context) -> bool:
        return bool(job_step(self.step, self.job, fatal=self.fatal))
