"""Spark's metrics configuration (``config/spark/metrics.properties``) for every JVM of a job.

Spark reads ``metrics.properties`` from its classpath, where only the master finds it (its
``SPARK_CONF_DIR`` is ``config/spark``): the workers, and the drivers and executors they
launch, run with an empty conf directory (class archives need one), and a driver submitted
through the REST API gets only its request's properties. So the file is also handed to them
as SparkConf properties, ``spark.metrics.conf.<key>``, which Spark reads the same way.
"""

from __future__ import annotations

from pathlib import Path

PREFIX = "spark.metrics.conf."


def metrics_properties(config_dir: Path) -> dict[str, str]:
    """The ``key=value`` lines of ``<config_dir>/spark/metrics.properties`` as SparkConf
    properties (empty when the file is absent: Spark's defaults then apply)."""
    path = config_dir / "spark" / "metrics.properties"
    if not path.is_file():
        return {}
    out: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if not line or line.startswith(("#", "!")) or "=" not in line:
            continue
        key, _, value = line.partition("=")
        out[PREFIX + key.strip()] = value.strip()
    return out
