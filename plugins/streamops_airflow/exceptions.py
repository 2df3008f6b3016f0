"""The exception hierarchy of the Airflow layer."""

from __future__ import annotations

from airflow.sdk.exceptions import AirflowFailException


class StreamopsAirflowError(Exception):
    """Base class of errors raised by the Airflow layer (hooks, operators, sensors)."""


class ParamError(StreamopsAirflowError, AirflowFailException):
    """A DAG parameter is invalid. Fails the task at once (no retry) naming the parameter."""

    def __init__(self, param: str, problem: str) -> None:
        self.param = param
        self.problem = problem
        super().__init__(f"invalid param '{param}': {problem}")


class ProcedureFailed(StreamopsAirflowError, AirflowFailException):
    """A step of an operation failed in a way a retry cannot fix (a refused plan, a duplicate
    live job, a job that did not become healthy). Fails the task at once with the reason."""


class JobNotHealthy(StreamopsAirflowError):
    """A submitted job did not become healthy. Retryable where a retry is safe (a first
    deploy: the retry replaces the failed driver); elsewhere a rollback handles it."""
