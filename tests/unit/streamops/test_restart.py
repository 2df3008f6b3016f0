from __future__ import annotations

import pytest

from streamops.exceptions import ConfigError
from streamops.procedures.restart import check_mode, restart_savepoint_name


def test_modes() -> None:
    assert check_mode("savepoint") == "savepoint"
    assert check_mode("last-checkpoint") == "last-checkpoint"
    with pytest.raises(ConfigError, match="not one of savepoint, last-checkpoint"):
        check_mode("hard")


def test_savepoint_names_are_safe() -> None:
    name = restart_savepoint_name("Fleet Pings")
    assert name.startswith("fleet-pings-restart-") and len(name) <= 63


def test_cli_restart_verb() -> None:
    from streamops.cli import build_parser

    args = build_parser().parse_args(["restart", "fleet", "--mode", "last-checkpoint"])
    assert (args.job, args.mode, args.savepoint, args.timeout) == (
        "fleet", "last-checkpoint", None, 300.0,
    )
    with pytest.raises(SystemExit):
        build_parser().parse_args(["restart", "fleet", "--mode", "hard"])
