"""A job version that crashes before its first batch: the upgrade must roll back."""

from __future__ import annotations

from spark_jobs.runtime import JobContext


def build(ctx: JobContext) -> None:
    raise RuntimeError("deliberate crash on start (rollback drill)")
