"""The dashboard's command lines, as ``streamops up`` and docker compose run them, are commands
of the CLI with the intended port and store."""

from __future__ import annotations

import shlex
from pathlib import Path

import yaml

from streamops.cli import build_parser
from streamops.cli.dashboard_cmds import cmd_dashboard
from streamops.settings import PROJECT_ROOT, Settings
from streamops.stack.local_stack import dashboard_command


def test_up_starts_streamops_dashboard_on_the_settings_port(tmp_path: Path) -> None:
    settings = Settings.from_env({"STREAMOPS_DASHBOARD_PORT": "18050"}, state_root=str(tmp_path))
    argv = dashboard_command(settings)
    assert argv[1:3] == ["-m", "streamops"]
    args = build_parser().parse_args(argv[3:])
    assert args.handler is cmd_dashboard and args.port == 18050 and args.host is None
    assert settings.dashboard_host == "127.0.0.1"  # where it binds without --host
    assert args.state_root == str(tmp_path)
    assert settings.dashboard_url == "http://127.0.0.1:18050"


def test_the_compose_service_runs_a_command_of_the_repository() -> None:
    compose = yaml.safe_load((PROJECT_ROOT / "docker-compose.yml").read_text(encoding="utf-8"))
    service = compose["services"]["dashboard"]
    argv = shlex.split(service["command"])
    assert argv[:3] == ["python", "-m", "streamops"]
    args = build_parser().parse_args(argv[3:])
    assert args.handler is cmd_dashboard and args.host == "0.0.0.0"
    assert args.store_url.startswith("postgresql+psycopg2://") and "@postgres:" in args.store_url
    assert service["ports"] == [f"127.0.0.1:{args.port}:{args.port}"]
