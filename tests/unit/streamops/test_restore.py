"""Checkpoints of stages new in a version: stale ones go, an armed standby's empty one stays."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from streamops.control import DriverGone
from streamops.exceptions import ClusterNotRunning
from streamops.restore import _no_savepoint, clear_stale_checkpoint
from streamops.settings import Settings


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


@pytest.fixture
def no_master(tmp_path: Path) -> Settings:
    """Settings whose master web UI port has nothing listening."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return Settings.from_env({}, state_root=str(tmp_path / "state"), master_webui_port=port)


def test_a_savepoint_whose_driver_died_says_what_was_kept(no_master: Settings) -> None:
    gone = DriverGone("job j: the driver went away before answering savepoint r1")
    message = _no_savepoint(no_master, "j", "sp-1", gone)
    assert message.startswith("job j: the driver died during savepoint sp-1; nothing was kept;")
    assert message.endswith("the job is not running (state unknown)")
    no_master.layout.savepoint("sp-1").mkdir(parents=True)
    assert "savepoint sp-1 was published before" in _no_savepoint(no_master, "j", "sp-1", gone)


def test_a_savepoint_whose_master_stopped_answering(no_master: Settings) -> None:
    message = _no_savepoint(no_master, "j", "sp-2", ClusterNotRunning("refused"))
    assert "the master stopped answering during savepoint sp-2 (refused)" in message
    assert "nothing was kept" in message and "streamops health" in message
