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
from contextlib import ExitStack
from typing import Any

from airflow.sdk import BaseSensorOperator, Context

from streamops_airflow.exceptions import ProcedureFailed

Step = Callable[..., Any]
OnFailure = Callable[[Any, str, str, Exception], Exception | None]
"""A job procedure's failure policy for a step that failed: ``(ops, job, owner, error)`` →
the error to fail the task with instead (its intent closed), or ``None``."""
Policy = Callable[[Any, Exception], Exception | None]


def run_owner(context: Context | dict[str, Any]) -> str:
    """Who owns an intent record: the DAG run (a retried task of the same run resumes)."""
    ti = context["ti"]
    return f"airflow:{ti.dag_id}/{ti.run_id}"


def this_run() -> str:
    """The owner of the intents of the running task's DAG run."""
    from airflow.sdk import get_current_context

    return run_owner(get_current_context())


def lease_run(context: Context | dict[str, Any]) -> str:
    """The run that holds a job's operation lease for a DAG run: ``<dag>/<run>``."""
    ti = context["ti"]
    return f"{ti.dag_id}/{ti.run_id}"


def last_task(context: Context | dict[str, Any]) -> bool:
    """Whether the running task ends its DAG run's path (no task downstream of it): its
    procedure is over when it returns, so it gives the job's operation lease up itself. The
    DAG's callbacks would too, but Airflow runs them after the run is marked ended, in
    another process, and not at all while its database is down: an operator acting as soon
    as the run shows ``success`` found the job still held."""
    task = getattr(context["ti"], "task", None)
    return task is not None and not getattr(task, "downstream_task_ids", True)


def run_step(step: Step, *args: Any, fatal: tuple[type[Exception], ...] = (),
             job: str | None = None, on_failure: Policy | None = None,
             **kwargs: Any) -> Any:  # fmt: skip
    """``step(ops, *args, **kwargs)`` with this task's operations port, acting as this DAG
    run; with ``job``, holding that job's operation lease for the DAG run (taken by its first
    task, renewed by each, given up by its last task, :func:`last_task`, and by the DAG's
    callbacks, :func:`release_run_leases`). An
    error of ``fatal`` fails the task with its reason, without a retry; so does a job busy
    with another operation (``JobBusy``, naming its holder) or taken over by one while this
    run was thought gone (``OperationLost``). A step that fails with another
    :class:`StreamopsError` goes to ``on_failure(ops, error)`` first: what it returns fails
    the task, without a retry (the CLI's failure policy, e.g. an intent closed as failed
    having changed nothing)."""
    from airflow.sdk import get_current_context

    from streamops.exceptions import JobBusy, OperationLost, StreamopsError
    from streamops.procedures.job_lease import acting_as, job_operation, note_step
    from streamops_airflow import hooks

    ops = hooks.ops_operations()
    try:
        with ExitStack() as hold:
            if job is not None:
                context = get_current_context()
                hold.enter_context(acting_as("dag", lease_run(context)))
                hold.enter_context(job_operation(ops, job, context["ti"].dag_id,
                                                 keep=not last_task(context)))  # fmt: skip
                note_step(getattr(step, "__name__", str(step)))
            try:
                return step(ops, *args, **kwargs)
            except StreamopsError as exc:
                if on_failure is None or isinstance(exc, (JobBusy, OperationLost)):
                    raise
                instead = on_failure(ops, exc)
                if instead is None:
                    raise
                raise ProcedureFailed(str(instead)) from exc
    except (JobBusy, OperationLost, *fatal) as exc:
        raise ProcedureFailed(str(exc)) from exc


def job_step(step: Step, job: str, *args: Any, fatal: tuple[type[Exception], ...] = (),
             on_failure: OnFailure | None = None, **kwargs: Any) -> Any:  # fmt: skip
    """``step(ops, job, owner, ...)``: a step of a job's procedure, for this DAG run, which
    holds the job's operation lease."""
    owner = this_run()
    policy: Policy | None = None
    if on_failure is not None:
        policy = lambda ops, exc: on_failure(ops, job, owner, exc)  # noqa: E731
    return run_step(step, job, owner, *args, fatal=fatal, job=job, on_failure=policy, **kwargs)


def release_run_leases(context: Context | dict[str, Any]) -> None:
    """The DAG run ended (its ``on_success_callback`` and ``on_failure_callback``): give up
    the operation leases it holds, so the next operation need not wait out their TTL."""
    import logging

    from streamops.state.op_lease import release_run
    from streamops_airflow import hooks

    run = context["dag_run"]
    released = release_run(hooks.ops_settings().layout, "dag", f"{run.dag_id}/{run.run_id}")
    if released:
        logging.getLogger("streamops.airflow").info(
            "DAG run %s/%s ended: operation lease of %s given up", run.dag_id, run.run_id,
            ", ".join(released))  # fmt: skip


class StepSensor(BaseSensorOperator):
    """Poll ``step`` (a step that answers whether it is done, e.g.
    ``upgrade_steps.savepoint_answered``) on ``job`` for this DAG run until it is; an error
    of ``fatal`` fails the task without a retry."""

    template_fields: Sequence[str] = ("job",)

    def __init__(self, *, step: Step, job: str, fatal: tuple[type[Exception], ...] = (),
                 on_failure: OnFailure | None = None, **kwargs: Any) -> None:  # fmt: skip
        super().__init__(**kwargs)
        self.step = step
        self.job = job
        self.fatal = fatal
        self.on_failure = on_failure

    def poke(self, context: Context) -> bool:
        return bool(job_step(self.step, self.job, fatal=self.fatal, on_failure=self.on_failure))
