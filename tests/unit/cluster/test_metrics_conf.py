"""Spark's PrometheusServlet configuration reaches the JVMs that do not read config/spark."""

from __future__ import annotations

from pathlib import Path

from streamops.cluster.metrics_conf import metrics_properties
from streamops.settings import PROJECT_ROOT


def test_the_projects_metrics_properties_become_spark_conf() -> None:
    props = metrics_properties(PROJECT_ROOT / "config")
    sink = "org.apache.spark.metrics.sink.PrometheusServlet"
    assert props["spark.metrics.conf.*.sink.prometheusServlet.class"] == sink
    assert props["spark.metrics.conf.*.sink.prometheusServlet.path"] == "/metrics/prometheus"
    assert all(k.startswith("spark.metrics.conf.") and "#" not in k for k in props)


def test_no_file_no_properties(tmp_path: Path) -> None:
    assert metrics_properties(tmp_path) == {}
