"""An executor's Python daemon that imports what its workers run before it forks them.

Spark starts one daemon (``pyspark.daemon``) per executor and forks a worker from it for each
Python task slot. Spark's daemon imports ``pyspark.worker`` only after the fork, so each new
worker imports PySpark and then the job's source readers (``requests`` with them) anew: more
than a second of CPU each, paid by the first batches after every executor start, which after a
dead node are the batches the job's recovery waits for. This daemon imports them once, then runs
Spark's own manager loop: its workers are forks that start at once.

Set as ``spark.python.daemon.module`` (``streamops.procedures.submit.DEFAULT_CONF``). PyArrow is not
imported here: it starts threads when imported, and a fork must not copy a process with
threads (Spark's daemon says the same); the workers import it when they first need it.
"""

from __future__ import annotations

import importlib

PRELOAD = (
    "pyspark.worker",  # the worker's main loop: PySpark, its serializers, cloudpickle
    "spark_jobs.sources.alpha",  # the readers the tasks unpickle
    "spark_jobs.sources.beta",
)

if __name__ == "__main__":
    for name in PRELOAD:
        importlib.import_module(name)
    from pyspark import daemon

    daemon.manager()
