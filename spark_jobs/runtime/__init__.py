"""The job runtime: what every job gets inside its Spark driver."""

from spark_jobs.runtime.context import JobContext
from spark_jobs.runtime.protocols import Stage

__all__ = ["JobContext", "Stage"]
