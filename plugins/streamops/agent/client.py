"""``AgentClient``: typed calls to one node agent; every refusal is an ``AgentError``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import requests

from streamops.exceptions import AgentError


@dataclass(frozen=True)
class NodeInfo:
    """A node as its agent sees it."""

    node: str
    role: str
    running: bool
    pid: int | None
    release: str | None
    worker_id: str | None = None

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> NodeInfo:
        pid = data.get("pid")
        return cls(node=str(data["node"]), role=str(data["role"]),
                   running=bool(data["running"]), pid=int(pid) if pid else None,
                   release=data.get("release"), worker_id=data.get("worker_id"))


@dataclass(frozen=True)
class Releases:
    known: list[str]
    active: str | None


class AgentClient:
    """Client of the agent at ``url``; ``timeout`` bounds a daemon start or decommission."""

    def __init__(self, url: str, token: str, timeout: float = 600.0) -> None:
        self.url = url.rstrip("/")
        self.token = token
        self.timeout = timeout

    def _call(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        headers = {"Authorization": f"Bearer {self.token}"}
        try:
            resp = requests.request(method, f"{self.url}{path}", headers=headers,
                                    timeout=self.timeout, **kwargs)
        except requests.RequestException as exc:
            raise AgentError(f"agent at {self.url} cannot be reached ({method} {path}): "
                             f"{exc}") from exc
        try:
            body = resp.json()
        except ValueError:
            body = {"error": resp.text.strip()[:500]}
        if resp.status_code >= 400:
            message = body.get("error") if isinstance(body, dict) else None
            raise AgentError(f"agent at {self.url} refused {method} {path} "
                             f"(HTTP {resp.status_code}): {message or body}",
                             status=resp.status_code)
        return dict(body)

    def health(self) -> dict[str, Any]:
        return self._call("GET", "/v1/health")

    def node(self, node: str) -> NodeInfo:
        return NodeInfo.from_json(self._call("GET", f"/v1/nodes/{node}"))

    def _daemon(self, node: str, action: str) -> NodeInfo:
        return NodeInfo.from_json(self._call("POST", f"/v1/nodes/{node}/daemon/{action}"))

    def start(self, node: str) -> NodeInfo:
        """Start the node's daemon; returns once the master confirms it (idempotent)."""
        return self._daemon(node, "start")

    def stop(self, node: str) -> NodeInfo:
        return self._daemon(node, "stop")

    def decommission(self, node: str) -> NodeInfo:
        """Gracefully decommission the node's worker, then stop it."""
        return self._daemon(node, "decommission")

    def kill(self, node: str) -> NodeInfo:
        return self._daemon(node, "kill")

    def releases(self) -> Releases:
        data = self._call("GET", "/v1/releases")
        return Releases(known=list(data["releases"]), active=data.get("active"))

    def switch_release(self, node: str, release: str) -> dict[str, Any]:
        """Make ``release`` the node's active jar release: ``{active, previous}``."""
        return self._call("POST", f"/v1/nodes/{node}/release", json={"release": release})
