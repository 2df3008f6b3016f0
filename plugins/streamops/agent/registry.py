"""Where the node agents are: ``<state>/cluster/agents/<node>.json``, and their token.

Each agent registers itself when it is up (node, role, URL, pid, command line) and removes
its entry when it stops. Callers (CLI, DAG tasks, :class:`LocalCluster`) find an agent by
node name with :class:`Agents`. The bearer token is one secret per state root, the file
``<state>/cluster/agent.token`` (mode 0600), or ``STREAMOPS_AGENT_TOKEN`` when set.
"""

from __future__ import annotations

import logging
import os
import secrets
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from streamops.agent.client import AgentClient
from streamops.cluster.daemons import MASTER_NAME
from streamops.cluster.status import worker_sort_key
from streamops.exceptions import AgentError
from streamops.processes import cmdline_matches, read_cmdline
from streamops.settings import Settings
from streamops.state.layout import StateLayout, read_json, write_json_atomic

log = logging.getLogger("streamops.agent")

TOKEN_ENV = "STREAMOPS_AGENT_TOKEN"


def load_token(path: Path, environ: dict[str, str] | None = None, create: bool = True) -> str:
    """The agents' bearer token: ``STREAMOPS_AGENT_TOKEN``, else the file (created with mode
    0600 and a random token if missing and ``create``)."""
    env = os.environ if environ is None else environ
    if env.get(TOKEN_ENV):
        return env[TOKEN_ENV]
    try:
        token = path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        if not create:
            raise AgentError(
                f"no agent token at {path} (and {TOKEN_ENV} is not set); start the agents "
                "first (`streamops cluster start`) or set the token"
            ) from None
        _create_token_file(path)
        return load_token(path, env, create=False)
    if not token:
        raise AgentError(f"agent token file {path} is empty; delete it to get a new token")
    return token


def node_order(node: str) -> tuple[bool, object]:
    """Sort key of node names: the master first, then the workers in index order."""
    return (node != MASTER_NAME, worker_sort_key(node))


def _create_token_file(path: Path) -> None:
    """Write a random token to ``path`` (mode 0600) atomically: a complete temporary file is
    hard-linked into place, so a concurrent reader never sees it empty and the first of
    several concurrent creators wins."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")  # mode 0600
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(secrets.token_urlsafe(32) + "\n")
        os.link(tmp, path)
        log.info("created agent token file %s (mode 0600)", path)
    except FileExistsError:
        pass  # another process created it first: use theirs
    finally:
        os.unlink(tmp)


@dataclass(frozen=True)
class AgentRecord:
    """One registered agent."""

    node: str
    role: str
    url: str
    pid: int
    cmd: list[str]

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> AgentRecord:
        return cls(node=str(data["node"]), role=str(data["role"]), url=str(data["url"]),
                   pid=int(data["pid"]), cmd=[str(c) for c in data.get("cmd", [])])

    def process_alive(self) -> bool:
        """True if the pid is still this agent (same command line), on this machine."""
        return bool(self.cmd) and cmdline_matches(read_cmdline(self.pid), ["", *self.cmd])


def register(layout: StateLayout, record: AgentRecord) -> None:
    write_json_atomic(layout.agent_file(record.node), asdict(record))


def unregister(layout: StateLayout, node: str, pid: int) -> None:
    """Remove the entry of ``node`` if it is still the one of ``pid``."""
    path = layout.agent_file(node)
    data = read_json(path)
    if data is not None and int(data.get("pid", -1)) == pid:
        path.unlink(missing_ok=True)


def records(layout: StateLayout) -> dict[str, AgentRecord]:
    """Registered agents by node name (unreadable entries are skipped with a warning)."""
    out: dict[str, AgentRecord] = {}
    if not layout.agents_dir.is_dir():
        return out
    for path in sorted(layout.agents_dir.glob("*.json")):
        try:
            record = AgentRecord.from_json(read_json(path) or {})
        except (KeyError, TypeError, ValueError) as exc:
            log.warning("ignoring unreadable agent entry %s: %s", path, exc)
            continue
        out[record.node] = record
    return out


class Agents:
    """The agents of a state root: a client per node, found in the registry."""

    def __init__(self, settings: Settings, timeout: float = 600.0) -> None:
        self.settings = settings
        self.layout = settings.layout
        self.timeout = timeout

    def records(self) -> dict[str, AgentRecord]:
        return records(self.layout)

    def workers(self) -> list[str]:
        """Worker node names that have an agent, in worker order."""
        return sorted((n for n, r in self.records().items() if r.role == "worker"),
                      key=worker_sort_key)

    def client(self, node: str) -> AgentClient:
        found = self.records()
        record = found.get(node)
        if record is None:
            known = ", ".join(sorted(found, key=node_order)) or "none"
            raise AgentError(
                f"no agent is registered for node {node!r} under {self.layout.agents_dir} "
                f"(known nodes: {known}); start its agent (`streamops agent --node {node}`)",
                status=404,
            )
        token = load_token(self.layout.agent_token_file, create=False)
        return AgentClient(record.url, token, timeout=self.timeout)

    def master(self) -> AgentClient:
        return self.client(MASTER_NAME)
