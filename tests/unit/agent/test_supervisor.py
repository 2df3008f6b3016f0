"""The agent's supervisor over a real child process (``sleep`` standing in for a Spark
daemon): a dead daemon is started again at once, then with backoff, then given up; a
deliberate stop is never undone; every step is said in the log and the record."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.agent_fake import AgentUnderTest, SleepDaemon

from streamops.agent import supervision
from streamops.agent.supervisor import RestartPolicy, Supervisor
from streamops.state.layout import StateLayout


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def daemon() -> Iterator[SleepDaemon]:
    found = SleepDaemon()
    try:
        yield found
    finally:
        found.stop()


def supervised(tmp_path: Path, daemon: SleepDaemon, clock: Clock,
               policy: RestartPolicy | None = None) -> Supervisor:  # fmt: skip
    sup = Supervisor(daemon, StateLayout(tmp_path / "state"),
                     policy or RestartPolicy(limit=3, window=600, backoff=2), clock=clock)
    sup.boot()
    request(sup, daemon, "start")
    return sup


def request(sup: Supervisor, daemon: SleepDaemon, action: str) -> None:
    """What the agent does on a daemon request (server.daemon_action)."""
    sup.requested(action)
    with sup.lock:
        before = daemon.pid()
        getattr(daemon, action)()
        sup.done(action, before)


def on_disk(sup: Supervisor) -> supervision.SupervisionRecord:
    found = supervision.read(sup.layout, sup.daemon.node)
    assert found is not None
    return found


def test_dead_daemon_restarted_at_once_then_with_backoff_then_given_up(
    tmp_path: Path, daemon: SleepDaemon, caplog: pytest.LogCaptureFixture
) -> None:
    clock = Clock()
    caplog.set_level(logging.INFO, logger="streamops.agent")
    sup = supervised(tmp_path, daemon, clock)
    first = daemon.pid()
    assert first is not None and on_disk(sup).keep_running

    # 1st death: started again by the next look, at once
    assert daemon.crash() == first
    sup.look()
    second = daemon.pid()
    assert second is not None and second != first
    record = on_disk(sup)
    assert record.state == "running" and record.pid == second
    assert [a.pid for a in record.restarts] == [second] and record.restarts[0].ok
    assert f"restarted worker-1 (worker) by its agent's supervisor: pid {second}" in caplog.text
    assert "restart 1 of 3" in caplog.text

    # 2nd death 1 s later: backoff 2 s after the last restart
    clock.now += 1
    daemon.crash()
    sup.look()
    assert daemon.pid() is None and on_disk(sup).state == "backoff"
    clock.now += 0.9
    sup.look()
    assert daemon.pid() is None
    clock.now += 0.2  # 2.1 s after the 1st restart
    sup.look()
    assert daemon.pid() is not None and len(on_disk(sup).restarts) == 2

    # 3rd death: 4 s after the 2nd restart
    daemon.crash()
    clock.now += 3.9
    sup.look()
    assert daemon.pid() is None
    clock.now += 0.2
    sup.look()
    assert daemon.pid() is not None and len(on_disk(sup).restarts) == 3

    # 4th death: 3 restarts in 600 s is the limit; it gives up, says so, and stays down
    daemon.crash()
    clock.now += 60
    for _ in range(3):
        sup.look()
        clock.now += 60
    assert daemon.pid() is None and daemon.starts == 4
    record = on_disk(sup)
    assert record.state == "gave-up" and record.gave_up_at is not None
    assert "gave up restarting worker-1 (worker): 3 restarts in the last 600 s (limit 3)" in (
        record.last)
    assert any(r.levelno == logging.ERROR and "gave up" in r.getMessage() for r in caplog.records)

    # a start request makes it wanted again and the count starts afresh
    request(sup, daemon, "start")
    assert on_disk(sup).state == "running" and on_disk(sup).reason == "started on request"
    daemon.crash()
    sup.look()
    assert daemon.pid() is not None and daemon.starts == 6


@pytest.mark.parametrize("action", ["stop", "kill", "decommission"])
def test_a_deliberate_stop_is_never_undone(
    tmp_path: Path, daemon: SleepDaemon, action: str
) -> None:
    clock = Clock()
    sup = supervised(tmp_path, daemon, clock)
    request(sup, daemon, action)
    for _ in range(5):
        clock.now += 100
        sup.look()
    assert daemon.pid() is None and daemon.starts == 1
    record = on_disk(sup)
    assert not record.keep_running and record.state == "stopped"
    assert record.reason == f"{action} requested" and record.restarts == []


def test_a_failed_restart_counts_and_is_tried_again_after_the_backoff(
    tmp_path: Path, daemon: SleepDaemon
) -> None:
    clock = Clock()
    sup = supervised(tmp_path, daemon, clock)
    daemon.failing = 1
    daemon.crash()
    sup.look()
    record = on_disk(sup)
    assert daemon.pid() is None and record.state == "down"
    assert not record.restarts[0].ok and "a test's failing start" in str(record.restarts[0].error)
    clock.now += 2.1
    sup.look()
    assert daemon.pid() is not None and [a.ok for a in on_disk(sup).restarts] == [False, True]


def test_a_daemon_started_by_a_request_first_is_not_started_twice(
    tmp_path: Path, daemon: SleepDaemon
) -> None:
    """Only one path starts a daemon: a request that brought it back is recorded as such,
    and the supervisor, holding the same lock, finds it running."""
    clock = Clock()
    sup = supervised(tmp_path, daemon, clock)
    daemon.crash()
    sup.look()  # restart 1
    daemon.crash()
    sup.look()  # backoff
    request(sup, daemon, "start")
    clock.now += 10
    sup.look()
    assert daemon.starts == 3  # the first start, restart 1, the request; no extra
    record = on_disk(sup)
    assert record.state == "running" and record.reason == "started on request"
    assert len(record.restarts) == 1


def test_the_supervisor_thread_restarts_a_dead_daemon_by_itself(
    tmp_path: Path, daemon: SleepDaemon
) -> None:
    sup = Supervisor(daemon, StateLayout(tmp_path / "state"),
                     RestartPolicy(limit=2, window=60, interval=0.05))  # fmt: skip
    sup.boot()
    request(sup, daemon, "start")
    sup.start()
    try:
        killed = daemon.crash()
        deadline = time.monotonic() + 5
        while daemon.pid() in (None, killed) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert daemon.pid() not in (None, killed)
    finally:
        sup.stop()
    record = on_disk(sup)
    assert record.state == "agent stopped" and record.restarts[0].pid == daemon.pid()


def test_no_supervision_with_a_limit_of_zero(tmp_path: Path, daemon: SleepDaemon) -> None:
    clock = Clock()
    sup = supervised(tmp_path, daemon, clock, RestartPolicy(limit=0))
    daemon.crash()
    sup.look()
    assert daemon.pid() is None and not on_disk(sup).keep_running


def test_an_agent_booting_beside_a_running_daemon_adopts_it(
    tmp_path: Path, daemon: SleepDaemon
) -> None:
    daemon.start()
    sup = Supervisor(daemon, StateLayout(tmp_path / "state"), RestartPolicy(), clock=Clock())
    sup.boot()
    record = on_disk(sup)
    assert record.keep_running and record.reason == "running when the agent started"
    daemon.crash()
    sup.look()
    assert daemon.pid() is not None


def test_requests_over_http_set_what_the_supervisor_keeps(
    supervised_agent: tuple[AgentUnderTest, Supervisor]
) -> None:
    agent, sup = supervised_agent
    client = agent.client()
    client.start("worker-1")
    agent.daemon.running = False  # the daemon died
    sup.look()
    assert agent.daemon.calls == ["start", "start"] and agent.daemon.running
    client.decommission("worker-1")
    sup.look()
    assert agent.daemon.calls == ["start", "start", "decommission"]
    assert not sup.record.keep_running and sup.record.reason == "decommission requested"
