"""Agent processes on this machine: the embedded default runs one agent per local node.

:func:`start_agent` launches ``python -m streamops agent --node N --port 0`` in its own
session (log ``<state>/cluster/logs/agent-<node>.log``) and waits until it has registered
itself and answers; :func:`stop_agent` ends it with SIGTERM (then SIGKILL). Agents carry the
cluster marker, so the session check "no process left under the state root" sees them too.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import time
from pathlib import Path

from streamops import processes
from streamops.agent import registry
from streamops.agent.client import AgentClient
from streamops.agent.registry import AgentRecord
from streamops.cluster.status import tail
from streamops.exceptions import AgentError, ProcessError
from streamops.settings import Settings

log = logging.getLogger("streamops.agent")


def agent_spec(settings: Settings, node: str, host: str) -> processes.DaemonSpec:
    argv = (sys.executable, "-m", "streamops", "--state-root", str(settings.state_root),
            "agent", "--node", node, "--host", host, "--port", "0",
            "--profile", str(settings.layout.agent_profile_file))
    env = {**settings.to_env(), "PYTHONUNBUFFERED": "1",
           processes.CLUSTER_MARKER: str(settings.layout.root)}
    return processes.DaemonSpec(name=f"agent-{node}", kind="service", argv=argv, env=env,
                              log=settings.layout.logs_dir / f"agent-{node}.log", ports={})


def live_agent(settings: Settings, node: str) -> AgentRecord | None:
    """The registered agent of ``node`` if its process runs and it answers."""
    record = registry.records(settings.layout).get(node)
    if record is None or not record.process_alive():
        return None
    try:
        AgentClient(record.url, "", timeout=5).health()
    except AgentError:
        return None
    return record


def start_agent(settings: Settings, node: str, host: str | None = None,
                timeout: float = 60.0) -> AgentRecord:
    """Start the agent of ``node`` unless one runs; return its registration. It binds
    ``host``, by default this node's address (``settings.local_host``)."""
    running = live_agent(settings, node)
    if running is not None:
        return running
    registry.load_token(settings.layout.agent_token_file)  # created once, before any agent
    started = processes.launch(agent_spec(settings, node, host or settings.local_host))
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        record = registry.records(settings.layout).get(node)
        if record is not None and record.pid == started.pid:
            log.info("started the agent of %s (pid %s) at %s", node, started.pid, record.url)
            return record
        if not processes.pid_alive(started.pid):
            break
        time.sleep(0.2)
    processes.stop_daemons([started], timeout=2)
    raise ProcessError(f"the agent of {node} did not register within {timeout:.0f}s; last "
                       f"lines of {started.log}:\n"
                       f"{tail(Path(started.log), 20, started.log_offset)}")


def stop_agent(settings: Settings, record: AgentRecord, timeout: float = 10.0) -> None:
    """SIGTERM the agent (it unregisters itself), SIGKILL it after ``timeout``."""
    if record.process_alive():
        os.kill(record.pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while processes.pid_alive(record.pid) and time.monotonic() < deadline:
            processes.reap(record.pid)
            time.sleep(0.1)
        if processes.pid_alive(record.pid):
            log.warning("agent of %s (pid %s) ignored SIGTERM; killing it", record.node,
                        record.pid)
            os.kill(record.pid, signal.SIGKILL)
        processes.reap(record.pid)
        log.info("stopped the agent of %s (pid %s)", record.node, record.pid)
    registry.unregister(settings.layout, record.node, record.pid)


def kill_agent(settings: Settings, node: str, timeout: float = 10.0) -> int | None:
    """``kill -9`` of the agent of ``node`` (a drill: its daemon killed next, the node is a
    lost host that nothing starts again by itself); its pid, ``None`` if none ran. Its
    registration stays, as a dead host's would."""
    record = registry.records(settings.layout).get(node)
    if record is None or not record.process_alive():
        return None
    os.kill(record.pid, signal.SIGKILL)
    deadline = time.monotonic() + timeout
    while processes.pid_alive(record.pid) and time.monotonic() < deadline:
        processes.reap(record.pid)
        time.sleep(0.05)
    log.info("killed the agent of %s (pid %s)", node, record.pid)
    return record.pid
