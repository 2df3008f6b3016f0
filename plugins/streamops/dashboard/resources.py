"""The dashboard's resources panel: the applied job deployments and savepoint requests with
their status and conditions (what ``streamops get`` shows), and the newest failed-reconcile
notifications. Read-only: the store's files as they are."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from streamops.exceptions import StreamopsError
from streamops.settings import Settings
from streamops.state.declarative.resources import Deployment, SavepointRequest
from streamops.state.declarative.store import Applied, Declared, S, Store

NOTIFICATIONS_SHOWN = 5


def resources(settings: Settings) -> dict[str, Any]:
    store = Store(settings.layout)  # the read side a snapshot lists too
    deployments = [{
        "name": a.name, "generation": a.generation, "deleting": a.deleting,
        "state": a.resource.state, "version": a.resource.spec.version,
        "status": status.model_dump(mode="json"),
    } for a, status in _whole(store.deployments) if isinstance(a.resource, Deployment)]  # fmt: skip
    requests = [{
        "name": a.name, "job": a.resource.job, "cancel": a.resource.cancel,
        "deleting": a.deleting, "status": status.model_dump(mode="json"),
    } for a, status in _whole(store.savepoint_requests)
        if isinstance(a.resource, SavepointRequest)]  # fmt: skip
    return {"deployments": deployments, "savepoint_requests": requests,
            "notifications": _notifications(store)}  # fmt: skip


def _whole(read: Callable[[], list[Declared[S]]]) -> list[tuple[Applied, S]]:
    """The resources read back whole, with their status; one that is not is left out."""
    try:
        found = read()
    except (StreamopsError, ValueError, OSError):
        return []
    return [(d.applied, d.status) for d in found if d.applied and d.status is not None]


def _notifications(store: Store) -> list[dict[str, Any]]:
    path = store.root / "notifications.jsonl"
    try:
        lines = path.read_text(encoding="utf-8").splitlines()[-NOTIFICATIONS_SHOWN:]
    except OSError:
        return []
    out = []
    for line in reversed(lines):
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out
