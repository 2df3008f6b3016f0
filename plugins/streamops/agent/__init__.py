"""Node agents: one small HTTP service per Spark node that starts, stops and decommissions
the node's Spark daemon and switches its active jar release.

- :mod:`~streamops.agent.server`: the FastAPI app and ``streamops agent`` (uvicorn);
- :mod:`~streamops.agent.client`: :class:`AgentClient`, typed calls with :class:`AgentError`;
- :mod:`~streamops.agent.registry`: where agents are found (``<state>/cluster/agents``) and
  the shared token; :class:`Agents` gives the client of a node by name;
- :mod:`~streamops.agent.processes`: starting and stopping agent processes on this machine
  (the embedded default runs one per local node).

Airflow and the CLI change nodes only through agents.
"""

from __future__ import annotations

from streamops.agent.client import AgentClient, NodeInfo
from streamops.agent.registry import AgentRecord, Agents

__all__ = ["AgentClient", "AgentRecord", "Agents", "NodeInfo"]
