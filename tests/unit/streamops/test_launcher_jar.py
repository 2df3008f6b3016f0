"""The launcher jar: a valid, deterministic jar holding only a manifest, written once."""

from __future__ import annotations

import zipfile
from pathlib import Path

from streamops.cluster.launcher_jar import JAR_NAME, ensure_launcher_jar
from streamops.state.layout import StateLayout


def test_jar_is_a_valid_zip_with_a_manifest(tmp_path: Path) -> None:
    layout = StateLayout.at(tmp_path)
    path = ensure_launcher_jar(layout)
    assert path == layout.lib_dir / JAR_NAME
    with zipfile.ZipFile(path) as jar:
        assert jar.testzip() is None
        assert jar.namelist() == ["META-INF/MANIFEST.MF"]
        manifest = jar.read("META-INF/MANIFEST.MF").decode("ascii")
        assert jar.getinfo("META-INF/MANIFEST.MF").date_time == (2020, 1, 1, 0, 0, 0)
    assert manifest.startswith("Manifest-Version: 1.0\r\n")
    assert manifest.endswith("\r\n\r\n")  # a manifest ends with an empty line
    assert all(line == "" or ": " in line for line in manifest.split("\r\n"))


def test_jar_is_written_once(tmp_path: Path) -> None:
    layout = StateLayout.at(tmp_path)
    path = ensure_launcher_jar(layout)
    stat = path.stat()
    assert ensure_launcher_jar(layout) == path
    again = path.stat()
    assert (again.st_ino, again.st_mtime_ns) == (stat.st_ino, stat.st_mtime_ns)
    assert sorted(p.name for p in layout.lib_dir.iterdir()) == [JAR_NAME]  # no temp file


def test_jar_bytes_are_identical_across_state_roots(tmp_path: Path) -> None:
    one = ensure_launcher_jar(StateLayout.at(tmp_path / "a")).read_bytes()
    two = ensure_launcher_jar(StateLayout.at(tmp_path / "b")).read_bytes()
    assert one == two
