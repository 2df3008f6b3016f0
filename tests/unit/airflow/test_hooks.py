from __future__ import annotations

from pathlib import Path

import pytest

from streamops.settings import Settings
from streamops_airflow.hooks import SparkStandaloneHook, connection_uri
from streamops_airflow.provider import CONN_TYPE, get_provider_info

ENV = "AIRFLOW_CONN_SPARK_STANDALONE_DEFAULT"


def test_settings_come_from_the_connection(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    wanted = Settings.from_env({}, state_root=str(tmp_path / "state root"), master_host="10.1.2.3",
                               rest_port=16066, master_webui_port=18080, master_port=17077)
    monkeypatch.setenv(ENV, connection_uri(wanted))
    monkeypatch.setenv("STREAMOPS_REST_PORT", "1")  # the connection wins over the environment
    got = SparkStandaloneHook().settings
    assert (got.master_host, got.rest_port, got.master_webui_port, got.master_port) == (
        "10.1.2.3", 16066, 18080, 17077,
    )
    assert got.state_root == wanted.state_root


def test_without_a_connection_the_environment_is_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv(ENV, raising=False)
    monkeypatch.setenv("STREAMOPS_STATE_ROOT", str(tmp_path))
    monkeypatch.setenv("STREAMOPS_REST_PORT", "16067")
    got = SparkStandaloneHook("streamops_no_such_conn").settings
    assert got.rest_port == 16067 and got.state_root == tmp_path.resolve()
    # Airflow's structlog writes hook logs to stdout
    assert "does not exist: using the STREAMOPS_* environment" in capsys.readouterr().out


def test_test_connection_reports_an_unreachable_master(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, free_port
) -> None:
    settings = Settings.from_env({}, state_root=str(tmp_path), master_webui_port=free_port())
    monkeypatch.setenv(ENV, connection_uri(settings))
    ok, message = SparkStandaloneHook().test_connection()
    assert not ok and "does not answer" in message


def test_provider_info_registers_the_connection_type() -> None:
    info = get_provider_info()
    assert info["package-name"] == "streamops"
    (conn,) = info["connection-types"]
    assert conn["connection-type"] == CONN_TYPE == SparkStandaloneHook.conn_type
    assert conn["hook-class-name"] == "streamops_airflow.hooks.SparkStandaloneHook"
    assert set(conn["conn-fields"]) == {"webui_port", "master_port", "state_root"}
