from __future__ import annotations

import os
from pathlib import Path

import pytest

from streamops.cluster.class_archives import ClassArchives, add_option, archive_key
from streamops.cluster.submission import build_submission
from streamops.settings import Settings
from streamops.spec import spec_from_dict

DRIVER = "spark.driver.extraJavaOptions"
EXECUTOR = "spark.executor.extraJavaOptions"


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings.from_env({}, state_root=str(tmp_path / "state"))


@pytest.fixture
def spark_home(tmp_path: Path) -> Path:
    jars = tmp_path / "spark" / "jars"
    jars.mkdir(parents=True)
    (jars / "spark-core_2.13-4.3.0.jar").write_bytes(b"core")
    return tmp_path / "spark"


def release(settings: Settings, content: bytes) -> Path:
    """Make ``lib/active`` point at a release holding one jar of ``content`` (made once)."""
    target = settings.layout.lib_dir / f"r-{len(content)}"
    if not target.is_dir():
        target.mkdir(parents=True)
        (target / "udf.jar").write_bytes(content)
    link = settings.layout.active_release_link
    link.unlink(missing_ok=True)
    link.symlink_to(target)
    return target / "udf.jar"


def trained(settings: Settings) -> ClassArchives:
    archives = ClassArchives.of(settings)
    archives.directory.mkdir(parents=True, exist_ok=True)
    for role in ("driver", "executor"):
        archives.path(role).write_bytes(b"jsa")
    return archives


def test_the_key_follows_every_jar_on_the_classpath(settings: Settings, spark_home: Path) -> None:
    jar = release(settings, b"r1")
    key = archive_key(settings, spark_home)
    assert archive_key(settings, spark_home) == key  # stable
    release(settings, b"r22")  # a jar release switch
    assert archive_key(settings, spark_home) != key
    release(settings, b"r1")
    assert archive_key(settings, spark_home) == key
    os.utime(jar, ns=(1, 1))  # the same jar rewritten: the JVM would refuse the archive
    assert archive_key(settings, spark_home) != key
    key = archive_key(settings, spark_home)
    (spark_home / "jars" / "extra.jar").write_bytes(b"x")  # another Spark install
    assert archive_key(settings, spark_home) != key


def test_without_archives_the_options_are_left_alone(settings: Settings) -> None:
    props = {DRIVER: "-XX:TieredStopAtLevel=1"}
    assert ClassArchives.of(settings).apply(props) == props


def test_trained_archives_are_added_to_both_roles(settings: Settings) -> None:
    archives = trained(settings)
    props = archives.apply({DRIVER: "-XX:TieredStopAtLevel=1", "spark.cores.max": "2"})
    driver = archives.path("driver")
    assert props[DRIVER] == f"-XX:TieredStopAtLevel=1 -XX:SharedArchiveFile={driver}"
    assert props[EXECUTOR] == f"-XX:SharedArchiveFile={archives.path('executor')}"
    assert props["spark.cores.max"] == "2"


def test_an_archive_of_one_role_alone_is_not_used(settings: Settings) -> None:
    archives = trained(settings)
    archives.path("executor").unlink()
    assert archives.apply({}) == {}


def test_options_with_their_own_class_sharing_flags_are_kept(settings: Settings) -> None:
    archives = trained(settings)
    own = {DRIVER: "-XX:+RecordDynamicDumpInfo", EXECUTOR: "-Xshare:off"}
    assert archives.apply(own) == own


def test_submissions_map_the_trained_archives(settings: Settings) -> None:
    spec = spec_from_dict({"name": "j", "version": "1", "entrypoint": "spark_jobs.fleet_pings",
                           "conf": {DRIVER: "-XX:TieredStopAtLevel=1"}})  # fmt: skip
    assert build_submission(spec, settings).spark_properties[DRIVER] == "-XX:TieredStopAtLevel=1"
    archives = trained(settings)
    props = build_submission(spec, settings).spark_properties
    assert props[DRIVER].endswith(f"-XX:SharedArchiveFile={archives.path('driver')}")
    assert f"--conf {EXECUTOR}=-XX:SharedArchiveFile={archives.path('executor')}" in " ".join(
        build_submission(spec, settings).spark_submit_args()
    )


def test_archives_of_other_keys_are_stale(settings: Settings) -> None:
    archives = trained(settings)
    old = archives.directory / "driver-0123456789abcdef.jsa"
    old.write_bytes(b"old")
    assert archives.stale() == [old]


def test_an_option_with_a_space_is_quoted() -> None:
    assert add_option("-Xss4m", "-XX:SharedArchiveFile=/a b/x.jsa") == (
        '-Xss4m "-XX:SharedArchiveFile=/a b/x.jsa"'
    )
    assert add_option("", "-Da=1") == "-Da=1"


def test_training_keeps_the_largest_executor_archive(settings: Settings, tmp_path: Path) -> None:
    from streamops.stack.class_training import _promote

    scratch = tmp_path / "scratch"
    scratch.mkdir()
    archives = ClassArchives(tmp_path / "archives", "k")
    archives.directory.mkdir()
    (scratch / "driver-10.jsa").write_bytes(b"d" * 5)
    (scratch / "executor-11.jsa").write_bytes(b"e" * 3)
    (scratch / "executor-12.jsa").write_bytes(b"E" * 7)
    _promote(archives, scratch)
    assert archives.path("driver").read_bytes() == b"d" * 5
    assert archives.path("executor").read_bytes() == b"E" * 7


def test_training_without_an_archive_fails_clearly(tmp_path: Path) -> None:
    from streamops.exceptions import ClusterError
    from streamops.stack.class_training import _promote

    archives = ClassArchives(tmp_path / "archives", "k")
    (tmp_path / "scratch").mkdir()
    (tmp_path / "scratch" / "driver-1.jsa").write_bytes(b"d")
    with pytest.raises(ClusterError, match="no executor archive"):
        _promote(archives, tmp_path / "scratch")
    assert not archives.path("driver").exists()  # both or neither
