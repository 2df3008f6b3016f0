"""The dashboard's resources panel: the applied job deployments and savepoint requests with
their status and conditions (what ``streamops get`` shows), and the newest failed-reconcile
notifications. Read-only: the store's files as they are."""

from __future__ import annotations

import json
from typing import Any

from streamops.declarative.resources import DEPLOYMENT, SAVEPOINT_REQUEST
from streamops.declarative.store import Store
from streamops.exceptions import StreamopsError
from streamops.settings import Settings

NOTIFICATIONS_SHOWN = 5


def resources(settings: Settings) -> dict[str, Any]:
    store = Store(settings.layout)
    deployments, requests = [], []
    for applied in _listed(store, DEPLOYMENT):
        status = store.deployment_status(applied.name)
        deployments.append({
            "name": applied.name, "generation": applied.generation, "deleting": applied.deleting,
            "state": applied.resource.state, "version": applied.resource.spec.version,
            "status": status.model_dump(mode="json"),
        })  # fmt: skip
    for applied in _listed(store, SAVEPOINT_REQUEST):
        status = store.request_status(applied.name)
        requests.append({"name": applied.name, "job": applied.resource.job,
                         "cancel": applied.resource.cancel, "deleting": applied.deleting,
                         "status": status.model_dump(mode="json")})  # fmt: skip
    return {"deployments": deployments, "savepoint_requests": requests,
            "notifications": _notifications(store)}  # fmt: skip


def _listed(store: Store, kind: str) -> list[Any]:
    try:
        return store.list(kind)
    except (StreamopsError, ValueError, OSError):
        return []


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
