"""Where applied resources and their status live, under the state root::

    <root>/declarative/deployments/<name>.json          the deployment as applied (spec by
                                                         value), its generation, deleting
    <root>/declarative/deployments/<name>.status.json   its status
    <root>/declarative/savepoint-requests/<name>.json   a savepoint request, likewise
    <root>/declarative/savepoint-requests/<name>.status.json
    <root>/declarative/inflight/                        the action each resource has in
                                                         flight (:mod:`.inflight`)
    <root>/declarative/reconcile.lock                   one reconcile pass at a time

Every write is atomic (a file beside, then a rename). The generation grows by one whenever an
apply changes the resource (Kubernetes' ``metadata.generation``); the status records the last
one reconciled.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from streamops.declarative.resources import (
    DEPLOYMENT,
    Deployment,
    Resource,
    SavepointRequest,
)
from streamops.declarative.status import DeploymentStatus, RequestStatus
from streamops.exceptions import ConfigError
from streamops.names import check_name
from streamops.state.layout import StateLayout, read_json, write_json_atomic

_DIRS = {DEPLOYMENT: "deployments", "SavepointRequest": "savepoint-requests"}


@dataclass(frozen=True)
class Applied:
    """A resource as the store holds it."""

    resource: Resource
    generation: int
    applied_at: float
    source: str = ""
    deleting: bool = False

    @property
    def name(self) -> str:
        return self.resource.name

    @property
    def kind(self) -> str:
        return self.resource.kind


class Store:
    def __init__(self, layout: StateLayout) -> None:
        self.root = layout.root / "declarative"

    # --- paths -------------------------------------------------------------------------
    def _dir(self, kind: str) -> Path:
        return self.root / _DIRS[kind]

    def resource_file(self, kind: str, name: str) -> Path:
        return self._dir(kind) / f"{check_name('resource', name)}.json"

    def status_file(self, kind: str, name: str) -> Path:
        return self._dir(kind) / f"{check_name('resource', name)}.status.json"

    @property
    def inflight_dir(self) -> Path:
        return self.root / "inflight"

    @property
    def lock_file(self) -> Path:
        return self.root / "reconcile.lock"

    # --- resources ---------------------------------------------------------------------
    def apply(self, resource: Resource, source: str = "") -> tuple[Applied, str]:
        """Store ``resource``; ``(applied, "created" | "configured" | "unchanged")``."""
        old = self.get(resource.kind, resource.name)
        if old is not None and old.resource == resource and not old.deleting:
            return old, "unchanged"
        if isinstance(resource, SavepointRequest) and old is not None and not old.deleting:
            raise ConfigError(f"savepoint request {resource.name} exists already and is not "
                              "changed by an apply; delete it first or use another "
                              "name")  # fmt: skip
        generation = old.generation + 1 if old is not None else 1
        applied = Applied(resource, generation, time.time(), source)
        self._write(applied)
        return applied, "created" if old is None else "configured"

    def _write(self, applied: Applied) -> None:
        write_json_atomic(self.resource_file(applied.kind, applied.name), {
            "resource": applied.resource.model_dump(mode="json"),
            "generation": applied.generation, "applied_at": applied.applied_at,
            "source": applied.source, "deleting": applied.deleting,
        })  # fmt: skip

    def mark_deleting(self, kind: str, name: str) -> Applied:
        old = self.get(kind, name)
        if old is None:
            raise ConfigError(f"no {_DIRS[kind][:-1].replace('-', ' ')} named {name!r}; "
                              f"{self._known(kind)}")  # fmt: skip
        marked = Applied(old.resource, old.generation + 1, time.time(), old.source, True)
        self._write(marked)
        return marked

    def remove(self, kind: str, name: str) -> None:
        for path in (self.resource_file(kind, name), self.status_file(kind, name)):
            path.unlink(missing_ok=True)

    def get(self, kind: str, name: str) -> Applied | None:
        data = read_json(self.resource_file(kind, name))
        return None if data is None else _applied(kind, data)

    def names(self, kind: str) -> list[str]:
        folder = self._dir(kind)
        if not folder.is_dir():
            return []
        return sorted(p.name[: -len(".json")] for p in folder.glob("*.json")
                      if not p.name.endswith(".status.json"))  # fmt: skip

    def list(self, kind: str) -> list[Applied]:
        found = (self.get(kind, n) for n in self.names(kind))
        return [a for a in found if a is not None]

    def _known(self, kind: str) -> str:
        names = self.names(kind)
        return f"known: {', '.join(names)}" if names else "there are none"

    # --- status ------------------------------------------------------------------------
    def deployment_status(self, name: str) -> DeploymentStatus:
        data = read_json(self.status_file(DEPLOYMENT, name))
        return DeploymentStatus.model_validate(data) if data else DeploymentStatus()

    def request_status(self, name: str) -> RequestStatus:
        data = read_json(self.status_file("SavepointRequest", name))
        return RequestStatus.model_validate(data) if data else RequestStatus()

    def save_status(self, kind: str, name: str, status: DeploymentStatus | RequestStatus) -> None:
        status.updated_at = time.time()
        write_json_atomic(self.status_file(kind, name), status.model_dump(mode="json"))


def _applied(kind: str, data: dict[str, Any]) -> Applied:
    model = Deployment if kind == DEPLOYMENT else SavepointRequest
    return Applied(model.model_validate(data["resource"]), int(data["generation"]),
                   float(data["applied_at"]), str(data.get("source") or ""),
                   bool(data.get("deleting")))  # fmt: skip
