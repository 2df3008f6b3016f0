"""Addresses beyond one machine: what is loopback, what a bind-all address is dialled at,
a host's identity by its node address, and each server bound where the settings say."""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path

import pytest

from streamops.agent import processes as agent_processes
from streamops.agent.server import advertised_url
from streamops.settings import Settings
from streamops.stack.local_stack import StackOptions, beta_url, simulator_options
from streamops.state.layout import StateLayout
from streamops_contract.hosts import LOOPBACK, binds_all, dial_address, is_loopback, this_host
from streamops_contract.state import lease


@pytest.mark.parametrize(
    ("host", "loopback"),
    [("127.0.0.1", True), ("127.9.9.9", True), ("localhost", True), ("::1", True),
     ("[::1]", True), ("::ffff:127.0.0.1", True), ("::ffff:10.0.0.2", False),
     ("10.0.0.2", False), ("spark-master", False), ("0.0.0.0", False)],
)  # fmt: skip
def test_loopback(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def test_a_bind_all_address_is_dialled_at_the_node_address() -> None:
    assert binds_all("0.0.0.0") and binds_all("::") and not binds_all("10.0.0.2")
    assert dial_address("10.0.0.2", "10.0.0.9") == "10.0.0.2"
    assert dial_address("0.0.0.0", "10.0.0.9") == "10.0.0.9"
    assert dial_address("0.0.0.0") == LOOPBACK  # the caller is on the server's machine


def test_this_host_is_the_node_address_when_set() -> None:
    assert this_host({"STREAMOPS_NODE_HOST": "10.0.0.11"}) == "10.0.0.11"
    assert this_host({}) == socket.gethostname()


def test_an_agent_binds_and_advertises_the_node_address(tmp_path: Path) -> None:
    settings = Settings.from_env({}, state_root=str(tmp_path), master_host="10.0.0.2",
                                 node_host="10.0.0.11")  # fmt: skip
    spec = agent_processes.agent_spec(settings, "worker-1", settings.local_host)
    assert spec.argv[spec.argv.index("--host") + 1] == "10.0.0.11"
    assert advertised_url("10.0.0.11", 7070) == "http://10.0.0.11:7070"
    # bound to every interface (compose): other hosts dial its node address, not a kernel
    # host name several namespaces or containers may share
    assert advertised_url("0.0.0.0", 7070, "10.0.0.11") == "http://10.0.0.11:7070"


def test_the_stack_serves_beta_and_the_dashboard_where_the_settings_say(tmp_path: Path) -> None:
    default = Settings.from_env({}, state_root=str(tmp_path))
    opts = StackOptions(spec=tmp_path / "x.yaml", beta_port=8123)
    assert beta_url(default, opts) == "http://127.0.0.1:8123/pings"
    assert default.dashboard_url == f"http://127.0.0.1:{default.dashboard_port}"
    node = Settings.from_env({"STREAMOPS_NODE_HOST": "10.0.0.3",
                              "STREAMOPS_DASHBOARD_HOST": "10.0.0.3"}, state_root=str(tmp_path))
    assert beta_url(node, opts) == "http://10.0.0.3:8123/pings"
    beta = simulator_options(node, opts)["beta"]
    assert beta[beta.index("--host") + 1] == "10.0.0.3"
    assert node.dashboard_url == f"http://10.0.0.3:{node.dashboard_port}"
    assert node.to_env()["STREAMOPS_DASHBOARD_HOST"] == "10.0.0.3"


def test_a_lease_holder_on_another_host_is_waited_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two hosts may share a kernel host name (network namespaces) and even a pid space: the
    holder's pid is looked at only on its own host, named by its node address."""
    layout = StateLayout.at(tmp_path)
    monkeypatch.setenv("STREAMOPS_NODE_HOST", "10.0.0.11")
    held = lease.acquire(layout, "job-a", "driver-1")
    assert held.host == "10.0.0.11"
    gone = lease.Lease(**{**held.__dict__, "pid": 2**22 + 7})  # no such process
    assert lease.holder_gone(gone)  # on this host: provably dead
    monkeypatch.setenv("STREAMOPS_NODE_HOST", "10.0.0.12")
    assert not lease.holder_gone(gone)  # on another host: only its heartbeat tells
    with pytest.raises(lease.Fenced, match="on 10.0.0.11"):
        lease.acquire(layout, "job-a", "driver-2")
    stale = lease.Lease(**{**held.__dict__, "heartbeat_at": time.time() - 60})
    assert not lease.alive(stale)
    assert os.environ["STREAMOPS_NODE_HOST"] == "10.0.0.12"
