from __future__ import annotations

import os
from pathlib import Path

import pytest

from streamops.cluster.class_archives import archive_key
from streamops.cluster.local_fs import FS_CLASS, FS_PROPERTY, fs_jar, with_local_fs
from streamops.cluster.submission import build_submission
from streamops.settings import Settings
from streamops.spec import spec_from_dict

DRIVER_CP = "spark.driver.extraClassPath"
EXECUTOR_CP = "spark.executor.extraClassPath"


@pytest.fixture
def config_dir(tmp_path: Path) -> Path:
    jar = fs_jar(tmp_path / "config")
    jar.parent.mkdir(parents=True)
    jar.write_bytes(b"fs")
    return tmp_path / "config"


def test_the_jar_goes_on_both_classpaths_with_the_class_named(config_dir: Path) -> None:
    props = with_local_fs({"spark.app.name": "j"}, config_dir)
    jar = str(fs_jar(config_dir))
    assert props == {"spark.app.name": "j", DRIVER_CP: jar, EXECUTOR_CP: jar, FS_PROPERTY: FS_CLASS}


def test_a_job_classpath_is_kept_first(config_dir: Path) -> None:
    props = with_local_fs({DRIVER_CP: "/opt/own.jar"}, config_dir)
    assert props[DRIVER_CP] == f"/opt/own.jar{os.pathsep}{fs_jar(config_dir)}"
    assert props[EXECUTOR_CP] == str(fs_jar(config_dir))


def test_a_job_file_system_of_its_own_is_left_alone(config_dir: Path) -> None:
    own = {FS_PROPERTY: "org.apache.hadoop.fs.LocalFileSystem"}
    assert with_local_fs(own, config_dir) == own


def test_without_the_jar_nothing_changes(tmp_path: Path) -> None:
    assert with_local_fs({"spark.app.name": "j"}, tmp_path) == {"spark.app.name": "j"}


def test_submissions_name_the_file_system(config_dir: Path, tmp_path: Path) -> None:
    settings = Settings.from_env({}, state_root=str(tmp_path / "state"), config_dir=str(config_dir))
    spec = spec_from_dict({"name": "j", "version": "1", "entrypoint": "spark_jobs.fleet_pings"})
    props = build_submission(spec, settings).spark_properties
    assert props[FS_PROPERTY] == FS_CLASS and props[EXECUTOR_CP] == str(fs_jar(config_dir))


def test_the_class_archives_follow_the_jar(config_dir: Path, tmp_path: Path) -> None:
    settings = Settings.from_env({}, state_root=str(tmp_path / "state"), config_dir=str(config_dir))
    key = archive_key(settings, tmp_path)
    os.utime(fs_jar(config_dir), ns=(1, 1))  # rebuilt: the JVM would refuse the archive
    assert archive_key(settings, tmp_path) != key
