from __future__ import annotations

import ast
from dataclasses import asdict
from pathlib import Path

import pytest

from streamops.procedures.cluster_restart import OPERATION, RestartIntent
from streamops.settings import PROJECT_ROOT, Settings
from streamops.state.layout import write_json_atomic
from streamops_airflow import cluster_groups
from streamops_airflow.hooks import SparkStandaloneHook, connection_uri, ops_settings
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


def test_every_dag_gets_its_settings_from_the_connection_when_it_exists(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cluster DAGs read the state root the connection names, not the environment's:
    editing the connection redirects every DAG, not only the job DAGs."""
    conn = Settings.from_env({}, state_root=str(tmp_path / "from-connection"))
    monkeypatch.setenv(ENV, connection_uri(conn))
    monkeypatch.setenv("STREAMOPS_STATE_ROOT", str(tmp_path / "from-environment"))
    assert ops_settings().state_root == conn.state_root
    intent = RestartIntent(release_from="r1", release_to="r2", workers=["w1"],
                           savepoints={"fleet": "fleet-restart"})  # fmt: skip
    write_json_atomic(conn.layout.intent_file(OPERATION), asdict(intent))
    assert cluster_groups.jobs_of_restart.function() == ["fleet"]


def test_without_a_connection_every_dag_uses_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STREAMOPS_STATE_ROOT", str(tmp_path))
    got = ops_settings("streamops_no_such_conn")
    assert got.state_root == tmp_path.resolve()


def _settings_resolutions(path: Path) -> list[str]:
    """Where ``path`` builds settings itself (``Settings.from_env``/``Settings(...)``) or
    reads them off a hook it made only for them (``SparkStandaloneHook(...).settings``)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Call):
            func = node.func
            name = ast.unparse(func)
            if name in ("Settings", "Settings.from_env"):
                found.append(f"{path.name}:{node.lineno} {name}(...)")
        if isinstance(node, ast.Attribute) and node.attr == "settings":
            if isinstance(node.value, ast.Call) and ast.unparse(node.value.func) == (
                "SparkStandaloneHook"
            ):
                found.append(f"{path.name}:{node.lineno} SparkStandaloneHook().settings")
    return found


def test_settings_are_resolved_in_one_place() -> None:
    """Only the hook turns the connection or the environment into settings (the trigger
    rebuilds the ones it was handed); the DAGs and task groups call ``ops_settings``."""
    files = sorted((PROJECT_ROOT / "dags").glob("*.py")) + sorted(
        (PROJECT_ROOT / "plugins" / "streamops_airflow").glob("*.py")
    )
    allowed = {"hooks.py", "triggers.py"}
    found = [f for p in files if p.name not in allowed for f in _settings_resolutions(p)]
    assert found == []
