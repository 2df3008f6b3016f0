"""The reconcile's failures as alerts: each resource whose status holds a failure, and each
error of a pass, a :class:`~streamops.alerts.Firing` with its job."""

from __future__ import annotations

import logging

from streamops.alerts import Firing
from streamops.exceptions import StreamopsError
from streamops.state.declarative.resources import DEPLOYMENT, SAVEPOINT_REQUEST
from streamops.state.declarative.store import Store
from streamops.state.layout import StateLayout

log = logging.getLogger("streamops.declarative.alerting")

GROUP = "reconcile"


def failing(layout: StateLayout, errors: list[str], only: str | None = None) -> list[Firing]:
    """What fails after a reconcile pass: each resource whose status holds a failure (a
    deployment's last failed action, a savepoint request ``Failed``), and each error of the
    pass (``Kind/name: ...``); ``only``: that job's resources alone."""
    store, out = Store(layout), dict[str, Firing]()
    jobs: dict[str, str] = {}  # "Kind/name" -> its job
    for kind in (DEPLOYMENT, SAVEPOINT_REQUEST):
        for name in store.names(kind):
            key = f"{kind}/{name}"
            try:
                jobs[key], message = _failure(store, kind, name)
            except (StreamopsError, ValueError) as exc:  # an unreadable file: the pass says so
                log.warning("cannot read %s for the alerts: %s", key, exc)
                continue
            if message is not None and (only is None or jobs[key] == only):
                out[key] = Firing(key, message, jobs[key], GROUP)
    for error in errors:
        key = error.split(": ", 1)[0]
        kind, _, name = key.partition("/")
        job = jobs.get(key) or (name if kind == DEPLOYMENT else "")
        if key not in out and (only is None or job == only):
            out[key] = Firing(key if name else "reconcile", error, job, GROUP)
    return list(out.values())


def _failure(store: Store, kind: str, name: str) -> tuple[str, str | None]:
    """The job of a resource, and why it fails when its status holds a failure."""
    if kind == DEPLOYMENT:
        failed = store.deployment_status(name).failed
        return name, None if failed is None else (
            f"{kind}/{name}: {failed.action} failed for generation {failed.generation} "
            f"({failed.count} time(s)): {failed.message}")  # fmt: skip
    applied = store.get(kind, name)
    job = str(getattr(applied.resource, "job", "")) if applied else ""
    status = store.request_status(name)
    why = f"{kind}/{name}: savepoint request Failed: {status.message}"
    return job, why if status.state == "Failed" else None
