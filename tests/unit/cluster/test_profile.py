from __future__ import annotations

from pathlib import Path

import pytest

from streamops.cluster.profile import ClusterProfile
from streamops.exceptions import ConfigError
from streamops.settings import PROJECT_ROOT


def test_defaults() -> None:
    profile = ClusterProfile()
    assert profile.workers == 2
    assert profile.worker_cores == 4
    assert profile.worker_memory == "4g"
    assert profile.daemon_memory == "512m"
    assert profile.worker_webui_port_base == 8181


def test_repo_profile_loads() -> None:
    profile = ClusterProfile.for_config_dir(PROJECT_ROOT / "config")
    assert profile.workers == 2
    assert profile.worker_webui_port(2) == 8182


def test_missing_file_gives_defaults(tmp_path: Path) -> None:
    assert ClusterProfile.for_config_dir(tmp_path) == ClusterProfile()


def test_empty_file_gives_defaults(tmp_path: Path) -> None:
    path = tmp_path / "local.yaml"
    path.write_text("# nothing\n")
    assert ClusterProfile.load(path) == ClusterProfile()


@pytest.mark.parametrize(
    ("yaml_text", "field"),
    [
        ("worker_memory: 4 GB\n", "worker_memory"),
        ("daemon_memory: lots\n", "daemon_memory"),
        ("workers: -1\n", "workers"),
        ("worker_cores: 0\n", "worker_cores"),
        ("worker_webui_port_base: 70000\n", "worker_webui_port_base"),
        ("decommission_timeout: 0\n", "decommission_timeout"),
        ("wokers: 3\n", "wokers"),
        ("master_properties: {foo: bar}\n", "master_properties"),
    ],
)
def test_invalid_field_is_named(tmp_path: Path, yaml_text: str, field: str) -> None:
    path = tmp_path / "local.yaml"
    path.write_text(yaml_text)
    with pytest.raises(ConfigError) as err:
        ClusterProfile.load(path)
    assert f"invalid field {field}" in str(err.value)
    assert str(path) in str(err.value)


def test_not_a_mapping(tmp_path: Path) -> None:
    path = tmp_path / "local.yaml"
    path.write_text("- workers: 2\n")
    with pytest.raises(ConfigError, match="mapping"):
        ClusterProfile.load(path)


def test_bad_yaml(tmp_path: Path) -> None:
    path = tmp_path / "local.yaml"
    path.write_text("workers: [2\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        ClusterProfile.load(path)


def test_worker_webui_ports() -> None:
    assert ClusterProfile(worker_webui_port_base=9000).worker_webui_port(3) == 9002
    assert ClusterProfile(worker_webui_port_base=0).worker_webui_port(3) == 0
    with pytest.raises(ConfigError, match="worker_webui_port_base"):
        ClusterProfile(worker_webui_port_base=65535).worker_webui_port(2)


def test_profile_is_frozen() -> None:
    with pytest.raises(ValueError):
        ClusterProfile().workers = 3  # type: ignore[misc]
