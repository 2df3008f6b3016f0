"""A job's own code (a spec's ``code``) on the driver's path and shipped to its executors.

The ops side publishes the code folder as a zip under the state root
(:mod:`streamops.job_code`); a spec described locally still names the folder. Either goes
first on ``sys.path`` before the entrypoint is imported; a zip is also handed to Spark
(``addPyFile``), so the executors' Python workers import the same version.
"""

from __future__ import annotations

import logging
import sys

from pyspark.sql import SparkSession

from streamops_contract.spec import JobSpec

log = logging.getLogger("spark_jobs.runtime")


def on_path(spec: JobSpec) -> None:
    """Put the job's own code first on the path (nothing without ``code``)."""
    if spec.code and spec.code not in sys.path:
        sys.path.insert(0, spec.code)
        log.info("job %s: its code from %s", spec.name, spec.code)


def ship(spark: SparkSession, spec: JobSpec) -> None:
    """Hand a published zip of the job's code to the executors."""
    if spec.code and spec.code.endswith(".zip"):
        spark.sparkContext.addPyFile(spec.code)
