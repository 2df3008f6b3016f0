"""The job JVMs' local file system (``streamops.fs.NioLocalFileSystem``) in a real JVM: it is
the ``file:`` scheme's implementation once named, and a file it creates gets the mode and the
checksum Hadoop's own gives, without running ``chmod`` (a ``chmod`` first on ``PATH`` notes
every call, then runs the real one)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from streamops.cluster.local_fs import FS_CLASS, fs_jar
from streamops.settings import PROJECT_ROOT

pytestmark = pytest.mark.integration

PROBE = r"""
import json, os, sys
from pyspark.sql import SparkSession
jar, impl, out = sys.argv[1:4]
b = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
b = b.config("spark.driver.extraClassPath", jar)
if impl:
    b = b.config("spark.hadoop.fs.file.impl", impl)
spark = b.getOrCreate()
jvm = spark._jvm
path = jvm.org.apache.hadoop.fs.Path("file://" + out)
fs = path.getFileSystem(spark._jsc.hadoopConfiguration())
stream = fs.create(path, True)
stream.write(b"offsets")
stream.close()
mode = fs.getFileStatus(path).getPermission().toShort()
print(json.dumps({"class": fs.getClass().getName(), "mode": mode}))
spark.stop()
"""


def probe(tmp_path: Path, name: str, impl: str) -> dict[str, object]:
    """Create ``<tmp_path>/files/<name>`` through Hadoop's ``file:`` scheme implemented by
    ``impl``, in a new JVM; its class, the file's mode, the files there, the ``chmod`` calls."""
    bin_dir, calls = tmp_path / "bin", tmp_path / f"chmod-{name}.log"
    bin_dir.mkdir(exist_ok=True)
    noting = bin_dir / "chmod"
    real = shutil.which("chmod") or "/bin/chmod"
    noting.write_text(f'#!/bin/sh\necho "$@" >> "$STREAMOPS_CHMOD_LOG"\nexec {real} "$@"\n')
    noting.chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
           "STREAMOPS_CHMOD_LOG": str(calls)}  # fmt: skip
    out = tmp_path / "files" / name
    out.parent.mkdir(exist_ok=True)
    run = subprocess.run(
        [sys.executable, "-c", PROBE, str(fs_jar(PROJECT_ROOT / "config")), impl, str(out)],
        capture_output=True, text=True, timeout=180, check=False, env=env,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    result = json.loads(run.stdout.strip().splitlines()[-1])
    result["files"] = sorted(p.name for p in out.parent.iterdir() if name in p.name)
    noted = calls.read_text().splitlines() if calls.exists() else []
    result["chmod"] = [c for c in noted if name in c]
    assert out.read_bytes() == b"offsets"
    return result


def test_files_get_hadoops_mode_and_checksum_without_a_process(tmp_path: Path) -> None:
    if not fs_jar(PROJECT_ROOT / "config").is_file():
        pytest.fail("config/jars/base/streamops-fs.jar is missing: run scripts/build_jars.sh")
    ours = probe(tmp_path, "ours", FS_CLASS)
    hadoops = probe(tmp_path, "hadoops", "org.apache.hadoop.fs.LocalFileSystem")
    assert ours["class"] == FS_CLASS and hadoops["class"] != FS_CLASS
    assert ours["mode"] == hadoops["mode"]  # 0666 less the umask, as Hadoop sets it
    assert ours["files"] == [".ours.crc", "ours"]
    assert hadoops["files"] == [".hadoops.crc", "hadoops"]
    assert ours["chmod"] == []
    assert len(hadoops["chmod"]) == 2  # the file and its checksum, a process each
