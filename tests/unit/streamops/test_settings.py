"""Settings from ``STREAMOPS_*`` environment variables, with loopback defaults."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from streamops.exceptions import ConfigError
from streamops.settings import PROJECT_ROOT, Settings
from streamops.state.layout import StateLayout


def test_defaults(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    settings = Settings.from_env({})
    assert settings.state_root == tmp_path.resolve() / "var"
    assert settings.config_dir == PROJECT_ROOT / "config"
    assert settings.master_url == "spark://127.0.0.1:7077"
    assert settings.rest_url == "http://127.0.0.1:6066"
    assert settings.webui_url == "http://127.0.0.1:8080"
    assert settings.python == sys.executable


def test_project_root_holds_the_config() -> None:
    assert (PROJECT_ROOT / "config" / "jobs").is_dir()
    assert (PROJECT_ROOT / "plugins" / "streamops" / "settings.py").is_file()


def test_from_env(tmp_path: Path) -> None:
    env = {
        "STREAMOPS_STATE_ROOT": str(tmp_path / "state"),
        "STREAMOPS_CONFIG_DIR": str(tmp_path / "config"),
        "STREAMOPS_MASTER_HOST": "10.0.0.5",
        "STREAMOPS_MASTER_PORT": "7177",
        "STREAMOPS_MASTER_WEBUI_PORT": "8180",
        "STREAMOPS_REST_PORT": "6166",
        "STREAMOPS_PYTHON": "/opt/py/bin/python3",
        "UNRELATED": "ignored",
    }
    settings = Settings.from_env(env)
    assert settings.state_root == (tmp_path / "state").resolve()
    assert settings.config_dir == tmp_path / "config"
    assert settings.master_url == "spark://10.0.0.5:7177"
    assert settings.webui_url == "http://10.0.0.5:8180"
    assert settings.rest_url == "http://10.0.0.5:6166"
    assert settings.python == "/opt/py/bin/python3"


def test_reads_os_environ_by_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STREAMOPS_STATE_ROOT", str(tmp_path))
    monkeypatch.setenv("STREAMOPS_REST_PORT", "16066")
    settings = Settings.from_env()
    assert (settings.state_root, settings.rest_port) == (tmp_path.resolve(), 16066)


def test_empty_variables_are_ignored(tmp_path: Path) -> None:
    settings = Settings.from_env(
        {"STREAMOPS_MASTER_PORT": "", "STREAMOPS_STATE_ROOT": str(tmp_path)}
    )
    assert settings.master_port == 7077


def test_overrides_win_over_env_and_none_is_ignored(tmp_path: Path) -> None:
    env = {"STREAMOPS_MASTER_PORT": "7177", "STREAMOPS_STATE_ROOT": str(tmp_path / "env")}
    settings = Settings.from_env(env, master_port=7277, state_root=None, rest_port=None)
    assert settings.master_port == 7277
    assert settings.state_root == (tmp_path / "env").resolve()
    assert settings.rest_port == 6066


def test_state_root_is_expanded_and_absolute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    settings = Settings.from_env({"STREAMOPS_STATE_ROOT": "~/state/../state"})
    assert settings.state_root == tmp_path.resolve() / "state"
    assert settings.layout == StateLayout.at(tmp_path / "state")


@pytest.mark.parametrize(
    ("variable", "value", "field"),
    [
        ("STREAMOPS_MASTER_PORT", "abc", "master_port"),
        ("STREAMOPS_MASTER_PORT", "0", "master_port"),
        ("STREAMOPS_REST_PORT", "70000", "rest_port"),
        ("STREAMOPS_MASTER_WEBUI_PORT", "-1", "master_webui_port"),
    ],
)
def test_a_bad_port_names_the_env_var(variable: str, value: str, field: str) -> None:
    with pytest.raises(ConfigError) as info:
        Settings.from_env({variable: value})
    message = str(info.value)
    assert f"invalid setting {field} ({variable})" in message


def test_a_bad_override_names_the_field() -> None:
    with pytest.raises(ConfigError, match=r"invalid setting rest_port \(STREAMOPS_REST_PORT\)"):
        Settings.from_env({}, rest_port="many")
    with pytest.raises(ConfigError, match="invalid setting bogus"):
        Settings.from_env({}, bogus=1)


def test_settings_are_immutable(tmp_path: Path) -> None:
    settings = Settings.from_env({"STREAMOPS_STATE_ROOT": str(tmp_path)})
    with pytest.raises(ValidationError):
        settings.master_port = 1  # type: ignore[misc]
