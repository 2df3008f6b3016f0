"""Describe ahead: which spec files ``up`` has described in the background (the versions a
running job may be upgraded to), from the project's own ``config/jobs``."""

from __future__ import annotations

from pathlib import Path

from streamops.procedures.describe_ahead import candidates
from streamops.settings import Settings


def names(paths: list[Path]) -> list[str]:
    return [p.name for p in paths]


def test_the_other_versions_of_the_running_jobs(tmp_path: Path) -> None:
    settings = Settings.from_env({}, state_root=str(tmp_path))
    assert names(candidates(settings, {"fleet-pings": "1"})) == ["fleet-pings-v2.yaml"]
    assert names(candidates(settings, {"fleet-pings": "2", "trade-analyser": "1"})) == [
        "fleet-pings.yaml", "trade-analyser-v2.yaml",
    ]  # fmt: skip
    assert candidates(settings, {}) == []  # nothing runs: nothing to describe


def test_a_broken_spec_is_skipped(tmp_path: Path) -> None:
    (tmp_path / "jobs").mkdir()
    (tmp_path / "jobs" / "broken.yaml").write_text("name: [not a name\n")
    settings = Settings.from_env({}, state_root=str(tmp_path / "s"), config_dir=str(tmp_path))
    assert candidates(settings, {"fleet-pings": "1"}) == []
