"""The ``cluster/daemons`` health check over supervision records (pure), and gathering only
the records of nodes whose registered agent wrote them."""

from __future__ import annotations

from pathlib import Path

from streamops.agent import registry, supervision
from streamops.agent.supervision import Attempt, SupervisionRecord
from streamops.health.daemons import check_daemons, gather_daemons
from streamops.health.report import Level
from streamops.state.layout import StateLayout

NOW = 10_000.0


def rec(node: str = "worker-1", **fields: object) -> SupervisionRecord:
    base = SupervisionRecord(node, "master" if node == "master" else "worker", 4242, 5, 600.0,
                             keep_running=True, state="running", reason="started on request")
    for key, value in fields.items():
        setattr(base, key, value)
    return base


def test_every_daemon_running_and_none_restarted_is_ok() -> None:
    result = check_daemons({"master": rec("master"), "worker-1": rec()}, NOW)
    assert result.level is Level.OK and result.name == "daemons"
    assert result.message.startswith("2 daemon(s) kept running by their node agents")


def test_a_recent_restart_warns_naming_when_and_how_long() -> None:
    restarted = rec(restarts=[Attempt(NOW - 30, True, 777, 4.2)])
    result = check_daemons({"worker-1": restarted, "worker-2": rec("worker-2")}, NOW)
    assert result.level is Level.WARN
    assert "worker-1's worker died and was restarted by its agent 1 time(s) in the last " \
           "10 min" in result.message
    assert "running again 4.2 s after it was seen dead, pid 777" in result.message
    old = rec(restarts=[Attempt(NOW - 700, True, 777, 4.2)])  # out of the window
    assert check_daemons({"worker-1": old}, NOW).level is Level.OK


def test_a_daemon_being_restarted_warns_and_a_given_up_one_fails() -> None:
    down = rec(state="backoff", last="restart 2 of 5 of worker-1 (worker) in 2 s (backoff)")
    assert check_daemons({"worker-1": down}, NOW).level is Level.WARN
    gave_up = rec("worker-2", state="gave-up", gave_up_at=NOW - 5,
                  restarts=[Attempt(NOW - 100 + i, True, 700 + i, 3.0) for i in range(5)])
    result = check_daemons({"worker-1": down, "worker-2": gave_up}, NOW)
    assert result.level is Level.FAIL
    assert "the agent of worker-2 gave up restarting its worker" in result.message
    assert "after 5 restarts in 10 min (limit 5)" in result.message
    assert "start it again with `streamops scale --add worker-2`" in result.message
    assert "worker-1's worker is down; its agent is restarting it" in result.message


def test_a_stopped_daemon_is_not_a_problem() -> None:
    stopped = rec(keep_running=False, state="stopped", reason="decommission requested")
    assert check_daemons({"worker-3": stopped}, NOW).level is Level.OK


def test_only_records_of_registered_agents_are_gathered(tmp_path: Path) -> None:
    layout = StateLayout(tmp_path / "state")
    for node, pid in (("master", 11), ("worker-1", 12), ("worker-2", 13)):
        supervision.write(layout, rec(node, agent_pid=pid))
    registry.register(layout, registry.AgentRecord("master", "master", "http://x", 11, ["a"]))
    registry.register(layout, registry.AgentRecord("worker-1", "worker", "http://y", 99, ["a"]))
    assert list(gather_daemons(layout)) == ["master"]  # worker-1: another agent; worker-2: none
