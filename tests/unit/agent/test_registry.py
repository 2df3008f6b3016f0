"""The agent registry and token file."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from streamops.agent.registry import AgentRecord, Agents, load_token, register, unregister
from streamops.exceptions import AgentError
from streamops.settings import Settings


def test_token_file_is_created_0600_and_reused(tmp_path: Path) -> None:
    path = tmp_path / "cluster" / "agent.token"
    token = load_token(path, environ={})
    assert len(token) > 30
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert load_token(path, environ={}) == token
    assert load_token(path, environ={"STREAMOPS_AGENT_TOKEN": "from-env"}) == "from-env"


def test_missing_token_without_create_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(AgentError, match="no agent token at"):
        load_token(tmp_path / "none", environ={}, create=False)


def test_unknown_node_names_the_registered_ones(tmp_path: Path) -> None:
    settings = Settings.from_env({}, state_root=str(tmp_path))
    register(settings.layout, AgentRecord("master", "master", "http://127.0.0.1:1", 11, ["x"]))
    register(settings.layout, AgentRecord("worker-1", "worker", "http://127.0.0.1:2", 12, ["x"]))
    agents = Agents(settings)
    assert agents.workers() == ["worker-1"]
    with pytest.raises(AgentError, match="no agent is registered for node 'worker-7'.*"
                                         "known nodes: master, worker-1"):
        agents.client("worker-7")
    unregister(settings.layout, "worker-1", pid=999)  # another agent's pid: kept
    assert "worker-1" in agents.records()
    unregister(settings.layout, "worker-1", pid=12)
    assert list(agents.records()) == ["master"]


def test_concurrent_first_use_gets_one_complete_token(tmp_path: Path) -> None:
    from concurrent.futures import ThreadPoolExecutor

    path = tmp_path / "cluster" / "agent.token"
    with ThreadPoolExecutor(max_workers=8) as pool:
        tokens = set(pool.map(lambda _: load_token(path, environ={}), range(32)))
    assert len(tokens) == 1 and all(tokens)
    assert [p.name for p in path.parent.iterdir()] == ["agent.token"]
