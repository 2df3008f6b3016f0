"""The job runtime: what every job gets inside its Spark driver."""

from spark_jobs.runtime.context import JobContext, Stage

__all__ = ["JobContext", "Stage"]
