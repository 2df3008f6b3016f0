from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from streamops.cluster.spark_home import (
    check_spark_install,
    find_spark_home,
    jars_version,
    python_package_version,
)
from streamops.exceptions import ClusterError


def fake_home(
    root: Path,
    version: str = "4.3.0",
    jar_versions: tuple[str, ...] = ("4.3.0",),
    with_jars_dir: bool = True,
    with_spark_class: bool = True,
) -> Path:
    home = root / "pyspark"
    home.mkdir()
    (home / "version.py").write_text(f"__version__: str = '{version}'\n")
    if with_jars_dir:
        (home / "jars").mkdir()
        (home / "jars" / "spark-sql_2.13-9.9.9.jar").write_bytes(b"")
        for v in jar_versions:
            (home / "jars" / f"spark-core_2.13-{v}.jar").write_bytes(b"")
    if with_spark_class:
        (home / "bin").mkdir()
        (home / "bin" / "spark-class").write_text("#!/bin/sh\n")
    return home


def test_real_install_matches() -> None:
    install = check_spark_install()
    assert install.home == find_spark_home()
    assert install.version == python_package_version(install.home)
    assert jars_version(install.home) == (install.version, install.scala_version)
    assert install.spark_class.is_file()


def test_find_spark_home_does_not_import_pyspark() -> None:
    code = (
        "import sys; from streamops.cluster.spark_home import find_spark_home; "
        "home = find_spark_home(); assert (home / 'version.py').is_file(); "
        "assert 'pyspark' not in sys.modules, 'pyspark was imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_fake_matching_tree(tmp_path: Path) -> None:
    install = check_spark_install(fake_home(tmp_path))
    assert (install.version, install.scala_version) == ("4.3.0", "2.13")


def test_version_mismatch_names_both_versions(tmp_path: Path) -> None:
    home = fake_home(tmp_path, version="4.3.0", jar_versions=("4.2.1",))
    with pytest.raises(ClusterError) as err:
        check_spark_install(home)
    message = str(err.value)
    assert "4.3.0" in message and "4.2.1" in message
    assert "pyspark-client" in message and "pip install" in message


def test_missing_jars_dir_is_pyspark_client(tmp_path: Path) -> None:
    with pytest.raises(ClusterError, match="no Spark jars.*pyspark-client"):
        check_spark_install(fake_home(tmp_path, with_jars_dir=False))


def test_jars_dir_without_core_jar(tmp_path: Path) -> None:
    with pytest.raises(ClusterError, match="no Spark jars"):
        check_spark_install(fake_home(tmp_path, jar_versions=()))


def test_several_core_jars(tmp_path: Path) -> None:
    with pytest.raises(ClusterError, match="several spark-core jars"):
        check_spark_install(fake_home(tmp_path, jar_versions=("4.2.1", "4.3.0")))


def test_missing_spark_class(tmp_path: Path) -> None:
    with pytest.raises(ClusterError, match="spark-class is missing"):
        check_spark_install(fake_home(tmp_path, with_spark_class=False))


@pytest.mark.parametrize(
    "text",
    ["__version__ = '4.0.1'\n", '__version__: str = "4.0.1"\n', "# x\n__version__='4.0.1'\n"],
)
def test_version_py_formats(tmp_path: Path, text: str) -> None:
    (tmp_path / "version.py").write_text(text)
    assert python_package_version(tmp_path) == "4.0.1"


def test_version_py_missing(tmp_path: Path) -> None:
    with pytest.raises(ClusterError, match="version.py is missing"):
        python_package_version(tmp_path)
