"""The ``cluster/daemons`` check: what the node agents' supervisors did with their daemons.

Gathered (:func:`gather_daemons`) from the supervision records of the nodes whose agent is
registered (:mod:`streamops.agent.supervision`); judged (:func:`check_daemons`) without I/O:

- ``fail`` — an agent gave up restarting its daemon (it names the node, the restarts and how
  to start it again);
- ``warn`` — a daemon is down and its agent is restarting it, or an agent restarted its
  daemon within the restart window (when, and how long it was down);
- ``ok``   — every supervised daemon runs, none was restarted within the window.

A node whose agent is gone has no supervisor: the workers check judges it (a lost host).
"""

from __future__ import annotations

import time

from streamops.agent.registry import records as agent_records
from streamops.agent.supervision import SupervisionRecord, read_all
from streamops.cluster.daemons import MASTER_NAME
from streamops.health.report import CheckResult, Level
from streamops.state.layout import StateLayout

DOWN_STATES = frozenset({"down", "backoff", "restarting"})


def gather_daemons(layout: StateLayout) -> dict[str, SupervisionRecord]:
    """The supervision records of the nodes whose registered agent wrote them."""
    agents = agent_records(layout)
    return {node: r for node, r in read_all(layout).items()
            if node in agents and agents[node].pid == r.agent_pid
            and r.state != "agent stopped"}  # fmt: skip


def _at(when: float) -> str:
    return time.strftime("%H:%M:%S UTC", time.gmtime(when))


def _start_hint(node: str) -> str:
    return ("`streamops cluster start`" if node == MASTER_NAME
            else f"`streamops scale --add {node}`")  # fmt: skip


def judge_daemon(record: SupervisionRecord, now: float) -> tuple[Level, str] | None:
    """The level and message of one node's supervision (``None``: nothing to say)."""
    node, minutes = record.node, f"{record.window / 60:g} min"
    if record.state == "gave-up":
        return Level.FAIL, (
            f"the agent of {node} gave up restarting its {record.role} at "
            f"{_at(record.gave_up_at or now)} after {len(record.recent(now))} restarts in "
            f"{minutes} (limit {record.limit}); it stays down: start it again with "
            f"{_start_hint(node)}")
    if record.keep_running and record.state in DOWN_STATES:
        return Level.WARN, (f"{node}'s {record.role} is down; its agent is restarting it "
                            f"({record.last})")
    recent = [a for a in record.recent(now) if a.ok]
    if recent:
        last = recent[-1]
        return Level.WARN, (
            f"{node}'s {record.role} died and was restarted by its agent {len(recent)} time(s) "
            f"in the last {minutes} (last at {_at(last.at)}, running again {last.seconds:.1f} s "
            f"after it was seen dead, pid {last.pid})")
    return None


def check_daemons(records: dict[str, SupervisionRecord] | None, now: float) -> CheckResult:
    """One result over every supervised daemon: the worst of them, each one named."""
    found = records or {}
    judged = [j for r in found.values() if (j := judge_daemon(r, now)) is not None]
    if not judged:
        kept = sum(1 for r in found.values() if r.keep_running)
        return CheckResult("cluster", "daemons", Level.OK,
                           f"{kept} daemon(s) kept running by their node agents; no restart "
                           "within the restart window")  # fmt: skip
    level = Level.FAIL if any(lv is Level.FAIL for lv, _ in judged) else Level.WARN
    return CheckResult("cluster", "daemons", level, "; ".join(m for _, m in judged))
