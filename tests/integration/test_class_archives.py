"""Class archives on the real cluster: the session's cluster trained them (its fixture); the
job JVMs map them, and a JVM given an archive that does not fit starts anyway."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from support.integration import ClusterHandle

from streamops.cluster.class_archives import ClassArchives, java_home
from streamops.stack.class_training import train_class_archives

pytestmark = pytest.mark.integration


def test_the_cluster_has_trained_archives(spark_cluster: ClusterHandle) -> None:
    assert not spark_cluster.training_error
    archives = ClassArchives.of(spark_cluster.settings)
    assert archives.present()
    for role in ("driver", "executor"):  # a Spark JVM's classes: tens of MiB at least
        assert archives.path(role).stat().st_size > 20 * 2**20
    again = train_class_archives(spark_cluster.settings)
    assert not again.trained and "up to date" in again.describe()


def test_an_archive_that_does_not_fit_is_ignored(
    spark_cluster: ClusterHandle, tmp_path: Path
) -> None:
    # another classpath than the archive's, led by a non-empty directory: the JVM warns
    # and loads its classes from the classpath
    archive = ClassArchives.of(spark_cluster.settings).path("executor")
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "x.properties").write_text("a=1\n")
    jdk = java_home()
    assert jdk is not None
    done = subprocess.run(
        [str(jdk / "bin" / "java"), f"-XX:SharedArchiveFile={archive}", "-cp",
         str(tmp_path / "conf"), "-version"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "version" in done.stderr
