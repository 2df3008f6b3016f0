"""Spark's own copies of PySpark and Py4J left off a Python path when the same release is
installed as a package.

Spark puts ``$SPARK_HOME/python/lib/pyspark.zip`` and ``py4j-*.zip`` first on the
``PYTHONPATH`` of every Python process it starts (the driver, the executors' daemons and
workers, the data source planners). Python imports from a zip without writing or reading
compiled bytecode, so each of those processes compiles PySpark's modules again: 0.75 s of CPU
for ``import pyspark.sql`` against 0.17 s from the installed package's bytecode (measured
2026-11-26, docs/performance.md). With Spark installed from the ``pyspark`` package,
``SPARK_HOME`` is that package's directory, so the zips hold the very release installed
beside it: a path without them imports the same code, compiled once by the installation.

Standard library only: the Python that ``streamops-python`` becomes uses it before anything
else is imported.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path


def installed_twin(entry: str) -> bool:
    """Whether ``entry`` is ``<site>/pyspark/python/lib/{pyspark.zip,py4j-*.zip}`` of a
    PySpark installed at ``<site>/pyspark``, ``<site>`` holds Py4J too and is on this
    interpreter's path (so the package is what an import then finds)."""
    path = Path(entry)
    name = path.name
    if not (name == "pyspark.zip" or (name.startswith("py4j-") and name.endswith(".zip"))):
        return False
    package = path.parent.parent.parent  # <site>/pyspark
    if path.parent.parent.name != "python" or package.name != "pyspark":
        return False
    site = package.parent
    return (
        (package / "__init__.py").is_file()
        and (site / "py4j" / "__init__.py").is_file()
        and any(_same(site, p) for p in sys.path)
    )


def _same(site: Path, entry: str) -> bool:
    try:
        return bool(entry) and site.samefile(entry)
    except OSError:
        return False


def without_spark_zips(entries: list[str]) -> list[str]:
    """``entries`` without the zips that have an installed twin (see the module's doc)."""
    return [e for e in entries if not installed_twin(e)]


def python_path_env(value: str | None) -> str | None:
    """A ``PYTHONPATH`` value without those zips (``None`` stays ``None``)."""
    if value is None:
        return None
    return os.pathsep.join(without_spark_zips(value.split(os.pathsep)))


def strip_environ() -> None:
    """Rewrite this process's ``PYTHONPATH`` without those zips (what it starts inherits it)."""
    if "PYTHONPATH" in os.environ:
        os.environ["PYTHONPATH"] = python_path_env(os.environ["PYTHONPATH"]) or ""
