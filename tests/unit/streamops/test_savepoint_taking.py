"""A savepoint whose driver or master goes away says what happened and what was kept."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from streamops.exceptions import ClusterNotRunning
from streamops.procedures.savepoint_taking import _no_savepoint
from streamops.settings import Settings
from streamops_contract.state.control import DriverGone


@pytest.fixture
def no_master(tmp_path: Path) -> Settings:
    """Settings whose master web UI port has nothing listening, and a procedure's patience
    for it cut to a second (it waits ``MASTER_PATIENCE`` for a master restarting)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    settings = Settings.from_env({}, state_root=str(tmp_path / "state"), master_webui_port=port)
    return settings.model_copy(update={"master_patience": 1.0})


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
