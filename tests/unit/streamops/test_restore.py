"""Checkpoints of stages new in a version: stale ones go, an armed standby's empty one stays."""

from __future__ import annotations

from pathlib import Path

import pytest

from streamops.settings import Settings
from streamops.world.restore import clear_stale_checkpoint


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings.from_env({}, state_root=str(tmp_path / "state"))


def checkpoint(settings: Settings, stage: str, *batches: int) -> Path:
    path = settings.layout.checkpoint("job", stage)
    (path / "offsets").mkdir(parents=True)
    (path / "commits").mkdir()
    (path / "metadata").write_text('{"id":"x"}')
    for b in batches:
        (path / "offsets" / str(b)).write_text("v1")
    return path


def test_a_stale_checkpoint_with_batches_is_removed(settings: Settings) -> None:
    path = checkpoint(settings, "new-stage", 0, 1)
    clear_stale_checkpoint(settings, "job", "new-stage", keep_empty=True)
    assert not path.exists()


def test_an_empty_checkpoint_is_kept_only_when_asked(settings: Settings) -> None:
    path = checkpoint(settings, "new-stage")
    clear_stale_checkpoint(settings, "job", "new-stage", keep_empty=True)
    assert (path / "metadata").is_file()  # the armed query's
    clear_stale_checkpoint(settings, "job", "new-stage")
    assert not path.exists()
    clear_stale_checkpoint(settings, "job", "new-stage")  # nothing there: nothing to do
