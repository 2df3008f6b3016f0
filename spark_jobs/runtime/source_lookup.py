"""No scan for installed Python data sources: the jobs register their own.

The first use of a Python data source in a JVM makes Spark look for installed ones (modules
named ``pyspark_*`` on the Python path, SPARK-45917): a Python daemon and worker started for
it and the whole path listed, inside every driver's build (its start, a relaunch, an
upgrade's standby, a description). The jobs register their sources at run time
(``spark.dataSource.register``), so a JobContext tells Spark there are none, through the
field Spark's own tests set (``DataSourceManager.dataSourceBuilders``). Measured in
``docs/performance.md``. A job that reads an installed ``pyspark_*`` source by its name sets
``spark.streamops.pythonSourceLookup: "true"`` in its spec's ``conf``; a Spark without the
field looks them up as before.
"""

from __future__ import annotations

import logging

from pyspark.sql import SparkSession

log = logging.getLogger("spark_jobs.source_lookup")

LOOKUP_CONF = "spark.streamops.pythonSourceLookup"


def skip_installed_source_lookup(spark: SparkSession) -> bool:
    """Tell this JVM's Spark that no Python data source is installed, unless the job asks
    for the lookup or it already ran; whether it was skipped."""
    if spark.conf.get(LOOKUP_CONF, "false").lower() == "true":
        return False
    jvm = spark._jvm  # type: ignore[attr-defined]
    try:
        datasources = jvm.org.apache.spark.sql.execution.datasources
        manager = getattr(getattr(datasources, "DataSourceManager$"), "MODULE$")
        if not manager.dataSourceBuilders().isEmpty():  # looked up (or set) already
            return False
        none = jvm.scala.Some(jvm.PythonUtils.toScalaMap(jvm.java.util.HashMap()))
        getattr(manager, "dataSourceBuilders_$eq")(none)
    except Exception as exc:  # another Spark: the lookup runs, as Spark does by default
        log.info("installed Python data sources are looked up (%s)", exc)
        return False
    return True
