from __future__ import annotations

from pathlib import Path

import pytest

from streamops.exceptions import ConfigError
from streamops.restart import (
    already_started,
    check_mode,
    read_intent,
    record_intent,
    restart_savepoint_name,
)
from streamops.settings import Settings


def test_modes() -> None:
    assert check_mode("savepoint") == "savepoint"
    assert check_mode("last-checkpoint") == "last-checkpoint"
    with pytest.raises(ConfigError, match="not one of savepoint, last-checkpoint"):
        check_mode("hard")


def test_intent_is_recorded_and_read_back(tmp_path: Path) -> None:
    settings = Settings.from_env({}, state_root=str(tmp_path))
    assert read_intent(settings, "job-a", "restart") == {}
    record_intent(settings, "job-a", "restart", "resubmit", version="2")
    intent = read_intent(settings, "job-a", "restart")
    assert intent["phase"] == "resubmit" and intent["version"] == "2"
    assert (tmp_path / "jobs" / "job-a" / "restart.json").is_file()


def test_nothing_to_resume_when_the_intent_is_another_phase(tmp_path: Path) -> None:
    settings = Settings.from_env({}, state_root=str(tmp_path))
    record_intent(settings, "job-a", "restart", "cancel")
    assert already_started(settings, "job-a", "restart", "resubmit") is None
    record_intent(settings, "job-a", "restart", "start-from-savepoint", savepoint="sp-1")
    assert already_started(settings, "job-a", "restart", "start-from-savepoint",
                           savepoint="sp-2") is None  # fmt: skip


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
