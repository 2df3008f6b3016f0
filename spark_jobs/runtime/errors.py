"""The runtime's errors, and how an error is shown in status files and logs."""

from __future__ import annotations


class JobFailed(RuntimeError):
    """A stage's streaming query terminated with an error."""


def short_error(exc: BaseException) -> str:
    """The error without Spark's query dump (logical plan), for status files and logs."""
    text = str(exc).split("=== Streaming Query ===", 1)[0].strip()
    return text[:4000]
