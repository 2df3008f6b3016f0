"""The one step runner: a procedure's steps in order, each waiting as long as it may.

The CLI (and any caller that wants the whole procedure, e.g. the reconcile loop) runs a
procedure through :func:`run_steps`; a DAG runs the same step functions one task (or
sensor) each through :mod:`streamops_airflow.procedure_tasks`. A polling step (one that
answers whether it is done) is given ``timeout`` from ``waits`` so the loop waits where a
sensor would poke. The failure policy is the procedure's ``on_failure``: called with the
error of the step that failed, it undoes what it must (a rollback, an abort, a record of the
failure) and raises what the caller should see; when it returns, the error goes on. An
operation that lost its lease to another operator (``OperationLost``) stops without it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, NoReturn

from streamops.exceptions import OperationLost, StreamopsError
from streamops.procedures.job_lease import note_step

Step = Callable[..., Any]
OnFailure = Callable[[StreamopsError], None | NoReturn]


def step_name(step: Step) -> str:
    """A step's name: its function's (of a ``functools.partial`` too)."""
    return str(getattr(getattr(step, "func", step), "__name__", step))


def run_steps(
    steps: Iterable[Step], *args: Any, waits: Mapping[str, float] | None = None,
    on_failure: OnFailure | None = None, **kwargs: Any,
) -> None:  # fmt: skip
    """Run ``step(*args, **kwargs)`` for each of ``steps`` in order (with ``timeout`` from
    ``waits`` by the step's name); a :class:`StreamopsError` goes to ``on_failure`` first."""
    waits = waits or {}
    try:
        for step in steps:
            name = step_name(step)
            wait = {"timeout": waits[name]} if name in waits else {}
            note_step(name)  # the job's operation lease names the step it is at
            step(*args, **kwargs, **wait)
    except OperationLost:
        raise  # the job is another operator's now: nothing of ours to undo
    except StreamopsError as exc:
        if on_failure is not None:
            on_failure(exc)
        raise
