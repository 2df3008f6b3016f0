"""Intent records: written before a step, read back by a retry, which resumes a started one."""

from __future__ import annotations

from pathlib import Path

from streamops.procedures.intents import already_started, read_intent, record_intent
from streamops.settings import Settings


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
