"""Spark's zipped PySpark and Py4J are left off the path of the Python processes a driver and
its executors start, when the same release is installed (its compiled bytecode is used)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pyspark
import pytest

from spark_jobs.pythonpath import installed_twin, python_path_env, without_spark_zips

CLIENT = str(Path(sys.executable).parent / "streamops-python")
SPARK_LIB = Path(pyspark.__file__).parent / "python" / "lib"
ZIPS = [str(SPARK_LIB / "pyspark.zip"), *map(str, sorted(SPARK_LIB.glob("py4j-*.zip")))]
PROBE = """
import os, sys, pyspark, py4j
print("pyspark", pyspark.__file__)
print("py4j", py4j.__file__)
print("path", [p for p in sys.path if p.endswith(".zip") and "python3" not in os.path.basename(p)])
print("env", os.environ.get("PYTHONPATH"))
"""


def fake_site(root: Path, *, package: bool = True, py4j: bool = True) -> Path:
    site = root / "site-packages"
    lib = site / "pyspark" / "python" / "lib"
    lib.mkdir(parents=True)
    (lib / "pyspark.zip").write_bytes(b"")
    if package:
        (site / "pyspark" / "__init__.py").write_text("")
    if py4j:
        (site / "py4j").mkdir()
        (site / "py4j" / "__init__.py").write_text("")
    return site


def test_the_installed_spark_zips_have_a_twin() -> None:
    assert len(ZIPS) == 2 and all(Path(z).is_file() for z in ZIPS), ZIPS
    assert all(installed_twin(z) for z in ZIPS)
    assert without_spark_zips([*ZIPS, "/elsewhere"]) == ["/elsewhere"]
    assert python_path_env(os.pathsep.join([ZIPS[0], "/a", ZIPS[1]])) == "/a"
    assert python_path_env(None) is None


@pytest.mark.parametrize(
    ("package", "py4j", "on_path", "twin"),
    [(True, True, True, True), (False, True, True, False), (True, False, True, False),
     (True, True, False, False)],
)  # fmt: skip
def test_a_zip_is_left_off_only_with_its_package_importable_beside_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    package: bool, py4j: bool, on_path: bool, twin: bool,
) -> None:  # fmt: skip
    site = fake_site(tmp_path, package=package, py4j=py4j)
    if on_path:
        monkeypatch.setattr(sys, "path", [*sys.path, str(site)])
    zipped = str(site / "pyspark" / "python" / "lib" / "pyspark.zip")
    assert installed_twin(zipped) is twin
    assert installed_twin(str(tmp_path / "other" / "pyspark.zip")) is False


def test_the_real_python_a_worker_becomes_imports_the_installed_pyspark(tmp_path: Path) -> None:
    """An executor's worker (no fork server): ``streamops-python`` execs the Python with the
    zips off its PYTHONPATH, and PySpark comes from the installed package."""
    (tmp_path / "mods").mkdir()
    (tmp_path / "mods" / "zipprobe.py").write_text(PROBE)
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join([*ZIPS, str(tmp_path / "mods")]),
        STREAMOPS_PYFORK_PYTHON=sys.executable,
    )  # fmt: skip
    env.pop("STREAMOPS_PYFORK", None)
    out = subprocess.run([CLIENT, "-m", "zipprobe"], env=env, capture_output=True, text=True,
                         timeout=60, cwd=tmp_path, check=True).stdout  # fmt: skip
    installed = str(Path(pyspark.__file__).parent)
    assert f"pyspark {installed}{os.sep}__init__.py" in out, out
    assert ".zip" not in out.split("py4j ")[1].split("\n")[0], out
    assert "path []" in out and f"env {tmp_path / 'mods'}\n" in out, out


def test_with_zips_elsewhere_the_path_is_kept(tmp_path: Path) -> None:
    """A Spark home that is not this environment's package: its zips stay."""
    (tmp_path / "mods").mkdir()
    (tmp_path / "mods" / "zipprobe.py").write_text(PROBE)
    other = tmp_path / "spark" / "python" / "lib" / "pyspark.zip"
    other.parent.mkdir(parents=True)
    other.write_bytes(b"")
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join([str(other), str(tmp_path / "mods")]),
        STREAMOPS_PYFORK_PYTHON=sys.executable,
    )  # fmt: skip
    env.pop("STREAMOPS_PYFORK", None)
    out = subprocess.run([CLIENT, "-m", "zipprobe"], env=env, capture_output=True, text=True,
                         timeout=60, cwd=tmp_path, check=True).stdout  # fmt: skip
    assert f"path [{str(other)!r}]" in out, out


def test_a_forked_worker_has_the_zips_off_its_path(tmp_path: Path) -> None:
    """A driver's worker, forked by the fork server: the request's PYTHONPATH (Spark's, zips
    first) reaches the child without them."""
    from spark_jobs.forkserver.server import ForkServer

    (tmp_path / "mods").mkdir()
    (tmp_path / "mods" / "zipprobe.py").write_text(PROBE + 'print("forked", os.getppid())\n')
    server = ForkServer.start()
    assert server is not None and server.proc.stdin is not None
    try:
        server.proc.stdin.write(f"allow {os.getpid()}\n".encode())
        server.proc.stdin.flush()
        deadline = time.monotonic() + 60
        while not os.path.exists(server.path) and time.monotonic() < deadline:
            time.sleep(0.05)
        env = dict(
            os.environ, PYTHONPATH=os.pathsep.join([*ZIPS, str(tmp_path / "mods")]),
            STREAMOPS_PYFORK=server.path, STREAMOPS_PYFORK_PYTHON=sys.executable,
            PYTHONHASHSEED=os.environ.get("PYTHONHASHSEED", "0"),  # the server's (else refused)
        )  # fmt: skip
        out = subprocess.run([CLIENT, "-m", "zipprobe"], env=env, capture_output=True,
                             text=True, timeout=60, cwd=tmp_path, check=True).stdout  # fmt: skip
    finally:
        server.stop()
    assert f"forked {server.proc.pid}\n" in out, out
    assert "path []" in out and f"env {tmp_path / 'mods'}\n" in out, out
