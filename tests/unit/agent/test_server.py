"""The node agent over HTTP: token auth, node and release checks, daemon verbs."""

from __future__ import annotations

import pytest
import requests
from support.agent_fake import AgentUnderTest

from streamops.exceptions import AgentError


def test_health_needs_no_token(agent: AgentUnderTest) -> None:
    assert agent.client(token="").health() == {"status": "ok", "node": "worker-1",
                                               "role": "worker"}


def test_request_without_token_is_refused_with_401(agent: AgentUnderTest) -> None:
    resp = requests.get(f"{agent.url}/v1/nodes/worker-1", timeout=10)
    assert resp.status_code == 401
    assert "missing bearer token" in resp.json()["error"]
    resp = requests.post(f"{agent.url}/v1/nodes/worker-1/daemon/start", timeout=10)
    assert resp.status_code == 401
    assert agent.daemon.calls == []


def test_wrong_token_is_refused(agent: AgentUnderTest) -> None:
    with pytest.raises(AgentError, match="wrong bearer token") as err:
        agent.client(token="guess").start("worker-1")
    assert err.value.status == 401
    assert agent.daemon.calls == []


def test_unknown_node_names_the_served_one(agent: AgentUnderTest) -> None:
    with pytest.raises(AgentError, match="unknown node 'worker-9'.*serves node 'worker-1'") as err:
        agent.client().start("worker-9")
    assert err.value.status == 404
    assert agent.daemon.calls == []


def test_daemon_verbs_reach_the_daemon(agent: AgentUnderTest) -> None:
    client = agent.client()
    assert not client.node("worker-1").running
    started = client.start("worker-1")
    assert started.running and started.pid == 4242 and started.worker_id == "worker-x"
    assert not client.decommission("worker-1").running
    client.start("worker-1")
    assert not client.kill("worker-1").running
    assert agent.daemon.calls == ["start", "decommission", "start", "kill"]


def test_unknown_action_is_a_clear_error(agent: AgentUnderTest) -> None:
    resp = requests.post(f"{agent.url}/v1/nodes/worker-1/daemon/explode",
                         headers={"Authorization": "Bearer s3cret-token"}, timeout=10)
    assert resp.status_code == 422
    assert "invalid request path.action" in resp.json()["error"]


def test_release_switch_and_unknown_release(agent: AgentUnderTest) -> None:
    client = agent.client()
    assert client.releases().known == ["r1", "r2"]
    assert client.releases().active is None
    assert client.switch_release("worker-1", "r1") == {"node": "worker-1", "active": "r1",
                                                       "previous": None}
    assert client.switch_release("worker-1", "r2")["previous"] == "r1"
    assert client.node("worker-1").release == "r2"
    with pytest.raises(AgentError, match="unknown jar release 'r9'.*known releases: r1, r2") as e:
        client.switch_release("worker-1", "r9")
    assert e.value.status == 404
    assert client.releases().active == "r2"
