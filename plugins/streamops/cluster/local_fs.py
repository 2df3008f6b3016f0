"""The job JVMs' local file system: Hadoop's, with a file's mode set through Java.

Spark writes every checkpoint file (offsets, commits, metadata) and state store file through
Hadoop's local ``FileSystem``. Without Hadoop's native library (pyspark ships none) that sets
each new file's mode, and its ``.crc`` checksum's, by running ``chmod`` in a child process: in
the driver, four per stage and batch; in an executor, two per state file written. The jar
``<config>/jars/base/streamops-fs.jar`` (``java/fs``, built by ``scripts/build_jars.sh``)
holds ``streamops.fs.NioLocalFileSystem``: the same checksummed local file system whose
``setPermission`` calls ``java.nio.file.Files.setPosixFilePermissions`` instead (Hadoop's own
way for modes with a sticky, setuid or setgid bit). A job's submission puts the jar on its
driver's and executors' classpath and names the class as the ``file:`` scheme's
implementation; without the jar (``build_jars.sh`` not run) it changes nothing.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

FS_CLASS = "streamops.fs.NioLocalFileSystem"
FS_PROPERTY = "spark.hadoop.fs.file.impl"
CLASSPATH_PROPERTIES = ("spark.driver.extraClassPath", "spark.executor.extraClassPath")


def fs_jar(config_dir: Path) -> Path:
    """Where ``scripts/build_jars.sh`` puts the jar of :data:`FS_CLASS`."""
    return config_dir / "jars" / "base" / "streamops-fs.jar"


def with_local_fs(props: Mapping[str, str], config_dir: Path) -> dict[str, str]:
    """``props`` with the local file system of this module: the jar added to the driver's and
    executors' extra classpath (after any the job gives) and the class named, unless the jar
    is missing or the job names a ``file:`` implementation of its own."""
    out = dict(props)
    jar = fs_jar(config_dir)
    if not jar.is_file() or FS_PROPERTY in out:
        return out
    for key in CLASSPATH_PROPERTIES:
        given = out.get(key, "")
        out[key] = f"{given}{os.pathsep}{jar}" if given else str(jar)
    out[FS_PROPERTY] = FS_CLASS
    return out
