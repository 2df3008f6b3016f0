"""Where Spark is: ``SPARK_HOME`` of the installed ``pyspark``, and whether it is whole.

The Airflow Spark provider depends on ``pyspark-client``, which installs into the same
``pyspark`` package as the full ``pyspark`` distribution but ships no jars. Installing one
over the other leaves a Python package whose version no longer matches its jars (or no jars
at all); :func:`check_spark_install` catches that before a daemon is started.

Nothing here imports ``pyspark``: the package is located with ``importlib.util.find_spec``
and its version is read from ``pyspark/version.py`` as text.
"""

from __future__ import annotations

import importlib.util
import re
from dataclasses import dataclass
from pathlib import Path

from streamops.exceptions import ClusterError

_VERSION_PY = re.compile(r"""__version__\s*(?::\s*str\s*)?=\s*["']([^"']+)["']""")
_CORE_JAR = re.compile(r"^spark-core_(\d+\.\d+)-(.+)\.jar$")

_REINSTALL_HINT = (
    "reinstall the full distribution with `pip install --force-reinstall --no-deps "
    "pyspark==<version>` (pyspark-client, pulled by the Airflow Spark provider, "
    "overwrites the same package without jars)"
)


@dataclass(frozen=True)
class SparkInstall:
    """A checked Spark installation: the Python package and its jars agree."""

    home: Path
    version: str
    scala_version: str

    @property
    def spark_class(self) -> Path:
        return self.home / "bin" / "spark-class"

    @property
    def jars_dir(self) -> Path:
        return self.home / "jars"


def find_spark_home() -> Path:
    """Return the directory of the installed ``pyspark`` package (its ``SPARK_HOME``)."""
    spec = importlib.util.find_spec("pyspark")
    if spec is None or not spec.submodule_search_locations:
        raise ClusterError(
            "pyspark is not installed in this Python; install the project with "
            "`pip install -e .` (it pins the full pyspark distribution)"
        )
    return Path(next(iter(spec.submodule_search_locations))).resolve()


def python_package_version(home: Path) -> str:
    """The version of the Python package, read from ``<home>/version.py``."""
    path = home / "version.py"
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise ClusterError(f"{path} is missing: the pyspark package is broken; "
                           f"{_REINSTALL_HINT}") from exc
    match = _VERSION_PY.search(text)
    if match is None:
        raise ClusterError(f"no __version__ in {path}; {_REINSTALL_HINT}")
    return match.group(1)


def jars_version(home: Path) -> tuple[str, str] | None:
    """``(spark_version, scala_version)`` of ``jars/spark-core_<scala>-<v>.jar``, or ``None``."""
    jars = home / "jars"
    if not jars.is_dir():
        return None
    found = sorted(
        (m.group(2), m.group(1))
        for p in jars.iterdir()
        if (m := _CORE_JAR.match(p.name))
    )
    if len(found) > 1:
        names = ", ".join(f"spark-core_{s}-{v}.jar" for v, s in found)
        raise ClusterError(f"several spark-core jars in {jars} ({names}); {_REINSTALL_HINT}")
    return found[0] if found else None


def check_spark_install(home: Path | None = None) -> SparkInstall:
    """Check that the Python package and the jars are the same Spark version.

    Raises :class:`ClusterError` when the jars are missing (``pyspark-client`` alone), when
    their version differs from the Python package's, or when ``bin/spark-class`` is missing.
    """
    home = find_spark_home() if home is None else home.resolve()
    py_version = python_package_version(home)
    jars = jars_version(home)
    if jars is None:
        raise ClusterError(
            f"no Spark jars in {home / 'jars'} (pyspark {py_version} looks like "
            f"pyspark-client, which cannot run a cluster); {_REINSTALL_HINT}"
        )
    jar_version, scala_version = jars
    if jar_version != py_version:
        raise ClusterError(
            f"pyspark Python package is {py_version} but its jars are {jar_version} "
            f"(spark-core_{scala_version}-{jar_version}.jar in {home / 'jars'}): the two "
            f"must match; {_REINSTALL_HINT}"
        )
    spark_class = home / "bin" / "spark-class"
    if not spark_class.is_file():
        raise ClusterError(f"{spark_class} is missing; {_REINSTALL_HINT}")
    return SparkInstall(home=home, version=py_version, scala_version=scala_version)
