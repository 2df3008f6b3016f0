"""Where applied resources and their status live, under the state root::

    <root>/declarative/deployments/<name>.json          the deployment as applied (spec by
                                                         value), its generation, deleting
    <root>/declarative/deployments/<name>.status.json   its status
    <root>/declarative/savepoint-requests/<name>.json   a savepoint request, likewise
    <root>/declarative/savepoint-requests/<name>.status.json
    <root>/declarative/inflight/<Kind>-<name>.json      the action each resource has in
                                                         flight, an intent (:mod:`.inflight`)
    <root>/declarative/reconcile.lock                   one reconcile pass at a time
    <root>/declarative/store.lock                       one change of the resources at a time

Every write is atomic (a file beside, then a rename). The generation grows by one whenever an
apply changes the resource (Kubernetes' ``metadata.generation``); the status records the last
one reconciled. A change (apply, delete, removal) reads and rewrites the generation under
``store.lock``, so concurrent applies each get their own generation and none is lost.

A file that cannot be read back (not UTF-8, not JSON, not of its schema) is an
:class:`UnreadableFile` naming it; :meth:`Store.scan` lists such resources apart, so that one
bad file holds back no other resource (the reconcile records it as the resource's ``Valid``
condition), and an apply replaces it with a generation above any its status recorded.

The read side, :meth:`Store.deployments` and :meth:`Store.savepoint_requests` (every resource
with its status, or why a file of it cannot be read back), is what a snapshot of the world
lists (``Snapshot.deployments``), and with it ``streamops get`` and the dashboard.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from pydantic import ValidationError

from streamops.exceptions import ConfigError, UnreadableFile
from streamops.spec import validation_lines
from streamops.state import intents
from streamops.state.declarative.resources import (
    DEPLOYMENT,
    SAVEPOINT_REQUEST,
    Deployment,
    Resource,
    SavepointRequest,
)
from streamops.state.declarative.status import DeploymentStatus, RequestStatus
from streamops.state.layout import StateLayout, write_json_atomic
from streamops_contract.names import check_name
from streamops_contract.state.locks import file_lock
from streamops_contract.textfile import decode

_DIRS = {DEPLOYMENT: "deployments", SAVEPOINT_REQUEST: "savepoint-requests"}


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


@dataclass(frozen=True)
class Unreadable:
    """A resource whose file cannot be read back: its name and why (one line, naming it)."""

    kind: str
    name: str
    error: str


S = TypeVar("S", DeploymentStatus, RequestStatus)


@dataclass(frozen=True)
class Declared(Generic[S]):
    """One resource as a reader sees it (``streamops get``, the dashboard, a snapshot): as
    applied, with its status; or why a file of it cannot be read back (``error``: ``applied``
    is None when its own file is the unreadable one, ``status`` when its status file is)."""

    kind: str
    name: str
    applied: Applied | None = None
    status: S | None = None
    error: str = ""

    @property
    def deleting(self) -> bool:
        return self.applied is not None and self.applied.deleting


class Store:
    def __init__(self, layout: StateLayout) -> None:
        self.layout = layout
        self.root = layout.root / "declarative"

    # --- paths -------------------------------------------------------------------------
    def _dir(self, kind: str) -> Path:
        return self.root / _DIRS[kind]

    def resource_file(self, kind: str, name: str) -> Path:
        return self._dir(kind) / f"{check_name('resource', name)}.json"

    def status_file(self, kind: str, name: str) -> Path:
        return self._dir(kind) / f"{check_name('resource', name)}.status.json"

    def inflight_file(self, kind: str, name: str) -> Path:
        """The intent of the action in flight for the resource (:mod:`.inflight`)."""
        return intents.KINDS["reconcile"].path(self.layout, intents.resource_key(kind, name))

    @property
    def lock_file(self) -> Path:
        """One reconcile pass at a time."""
        return self.root / "reconcile.lock"

    @property
    def store_lock(self) -> Path:
        """One change of the resources at a time (read the generation, write the next)."""
        return self.root / "store.lock"

    # --- resources ---------------------------------------------------------------------
    def apply(self, resource: Resource, source: str = "") -> tuple[Applied, str]:
        """Store ``resource``; ``(applied, "created" | "configured" | "unchanged")``."""
        with file_lock(self.store_lock):
            try:
                old = self.get(resource.kind, resource.name)
            except UnreadableFile:  # replaced whole: above any generation it was seen at
                floor = self._generation_seen(resource.kind, resource.name)
                applied = Applied(resource, floor + 1, time.time(), source)
                self._write(applied)
                return applied, "configured"
            if old is not None and old.resource == resource and not old.deleting:
                return old, "unchanged"
            if isinstance(resource, SavepointRequest) and old is not None and not old.deleting:
                raise ConfigError(f"savepoint request {resource.name} exists already and is "
                                  "not changed by an apply; delete it first or use another "
                                  "name")  # fmt: skip
            generation = old.generation + 1 if old is not None else 1
            applied = Applied(resource, generation, time.time(), source)
            self._write(applied)
            return applied, "created" if old is None else "configured"

    def _generation_seen(self, kind: str, name: str) -> int:
        """The highest generation the status or the in-flight record of ``name`` names (its
        own file being unreadable)."""
        seen = [0]
        for path in (self.status_file(kind, name), self.inflight_file(kind, name)):
            try:
                data = _read_json(path)
            except UnreadableFile:
                continue
            if isinstance(data, dict):
                seen += [int(v) for v in _generations(data)]
        return max(seen)

    def _write(self, applied: Applied) -> None:
        write_json_atomic(self.resource_file(applied.kind, applied.name), {
            "resource": applied.resource.model_dump(mode="json"),
            "generation": applied.generation, "applied_at": applied.applied_at,
            "source": applied.source, "deleting": applied.deleting,
        })  # fmt: skip

    def mark_deleting(self, kind: str, name: str) -> Applied:
        with file_lock(self.store_lock):
            old = self.get(kind, name)
            if old is None:
                raise ConfigError(f"no {_DIRS[kind][:-1].replace('-', ' ')} named {name!r}; "
                                  f"{self._known(kind)}")  # fmt: skip
            marked = Applied(old.resource, old.generation + 1, time.time(), old.source, True)
            self._write(marked)
            return marked

    def remove(self, kind: str, name: str, generation: int | None = None) -> bool:
        """Remove ``name`` and its status; with ``generation``, only while it is still at
        that generation (not applied again meanwhile). Whether it was removed."""
        with file_lock(self.store_lock):
            if generation is not None:
                current = self.get(kind, name)
                if current is not None and current.generation != generation:
                    return False
            for path in (self.resource_file(kind, name), self.status_file(kind, name)):
                path.unlink(missing_ok=True)
            return True

    def remember_deletion(self, name: str, savepoint: str) -> None:
        """A deployment removed after it was stopped to ``savepoint`` (by its deletion, or
        an earlier suspend): a deployment of that name applied again starts from it."""
        write_json_atomic(self.root / "deleted" / f"{check_name('resource', name)}.json",
                          {"savepoint": savepoint, "at": time.time()})  # fmt: skip

    def deleted_savepoint(self, name: str) -> str | None:
        """The savepoint a removed deployment of ``name`` was stopped to, if any."""
        try:
            data = _read_json(self.root / "deleted" / f"{check_name('resource', name)}.json")
        except UnreadableFile:
            return None
        found = data.get("savepoint") if isinstance(data, dict) else None
        return str(found) if found else None

    def get(self, kind: str, name: str) -> Applied | None:
        """The resource as stored, None if there is none; :class:`UnreadableFile` if its file
        cannot be read back."""
        path = self.resource_file(kind, name)
        data = _read_json(path)
        if data is None:
            return None
        try:
            return _applied(kind, data)
        except ValidationError as exc:
            raise _invalid(path, f"a stored {kind}", exc) from exc
        except (KeyError, TypeError, ValueError) as exc:
            raise UnreadableFile(f"{path}: not a stored {kind}: {type(exc).__name__}: "
                                 f"{exc}") from exc  # fmt: skip

    def names(self, kind: str) -> list[str]:
        folder = self._dir(kind)
        if not folder.is_dir():
            return []
        return sorted(p.name[: -len(".json")] for p in folder.glob("*.json")
                      if not p.name.endswith(".status.json"))  # fmt: skip

    def scan(self, kind: str) -> tuple[list[Applied], list[Unreadable]]:
        """Every resource of ``kind``: those read back, and those whose file cannot be."""
        found, bad = [], []
        for name in self.names(kind):
            try:
                applied = self.get(kind, name)
            except ConfigError as exc:  # unreadable, or a file name no resource can have
                bad.append(Unreadable(kind, name, str(exc)))
                continue
            if applied is not None:
                found.append(applied)
        return found, bad

    def list(self, kind: str) -> list[Applied]:
        """Every resource of ``kind`` that can be read back."""
        return self.scan(kind)[0]

    def _known(self, kind: str) -> str:
        names = self.names(kind)
        return f"known: {', '.join(names)}" if names else "there are none"

    # --- status ------------------------------------------------------------------------
    def deployment_status(self, name: str) -> DeploymentStatus:
        return _status(DeploymentStatus, self.status_file(DEPLOYMENT, name))

    def request_status(self, name: str) -> RequestStatus:
        return _status(RequestStatus, self.status_file(SAVEPOINT_REQUEST, name))

    def status(self, kind: str, name: str) -> DeploymentStatus | RequestStatus:
        """The status of ``name`` of ``kind`` (a fresh one if none is recorded)."""
        return self.deployment_status(name) if kind == DEPLOYMENT else self.request_status(name)

    # --- the read side: every resource with its status ---------------------------------
    def deployments(self) -> list[Declared[DeploymentStatus]]:
        """Every deployment with its status, by name; one whose files cannot be read back
        is listed with why."""
        return _declared(self, DEPLOYMENT, self.deployment_status)

    def savepoint_requests(self) -> list[Declared[RequestStatus]]:
        """Every savepoint request with its status, by name, likewise."""
        return _declared(self, SAVEPOINT_REQUEST, self.request_status)

    def save_status(self, kind: str, name: str, status: DeploymentStatus | RequestStatus) -> None:
        status.updated_at = time.time()
        write_json_atomic(self.status_file(kind, name), status.model_dump(mode="json"))


def _declared(store: Store, kind: str, status: Callable[[str], S]) -> list[Declared[S]]:
    found, bad = store.scan(kind)
    entries = [(b.name, None, b.error) for b in bad] + [(a.name, a, "") for a in found]
    out: list[Declared[S]] = []
    for name, applied, error in entries:
        try:  # the status of a resource whose own file is unreadable says so (``Valid``)
            seen: S | None = status(name)
        except ConfigError as exc:  # unreadable, or a file name no resource can have
            seen, error = None, error or str(exc)
        out.append(Declared(kind, name, applied, seen, error))
    return sorted(out, key=lambda d: d.name)


def _applied(kind: str, data: dict[str, Any]) -> Applied:
    model = Deployment if kind == DEPLOYMENT else SavepointRequest
    return Applied(model.model_validate(data["resource"]), int(data["generation"]),
                   float(data["applied_at"]), str(data.get("source") or ""),
                   bool(data.get("deleting")))  # fmt: skip


def _read_json(path: Path) -> Any | None:
    """The JSON of ``path``, None if there is no such file; :class:`UnreadableFile` (one line,
    naming it) if it is not UTF-8 or not JSON."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise UnreadableFile(f"cannot read {path}: {exc.strerror}") from exc
    try:
        return json.loads(decode(data, path))
    except ValueError as exc:
        raise UnreadableFile(f"{path}: not valid JSON: {exc}") from exc


def _status(model: type[Any], path: Path) -> Any:
    data = _read_json(path)
    if not data:
        return model()
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise _invalid(path, "a status", exc) from exc


def _invalid(path: Path, what: str, exc: ValidationError) -> UnreadableFile:
    """One line naming the file and every bad field."""
    return UnreadableFile(f"{path}: not {what}: "
                          + "; ".join(x.strip() for x in validation_lines(exc)))  # fmt: skip


def _generations(data: dict[str, Any]) -> list[int]:
    """Every generation a status or an in-flight record names."""
    found = []
    for key, value in data.items():
        if key in ("generation", "observed_generation") and isinstance(value, int):
            found.append(value)
        elif isinstance(value, dict):
            found += _generations(value)
        elif isinstance(value, list):
            found += [g for v in value if isinstance(v, dict) for g in _generations(v)]
    return found
