"""The kinds of intent record, and every intent record present under the state root.

An intent is a procedure's (or the reconcile's) record of what it is doing, written before
each destructive step and after it (:class:`streamops.procedures.intent_store.IntentStore`
writes and resumes them). Every kind is registered here, with where its records live and how
an older layout on disk reads::

    jobs/<job>/<name>.json                      a job's procedure (upgrade, restart, deploy)
    <root>/cluster/intents/<name>.json          the cluster's (cluster-restart, scale)
    <root>/declarative/inflight/<Kind>-<resource>.json
                                                the reconcile's action on one resource

so that a reader (health, a tool) lists every record, of any kind, from the state root alone
(:func:`records`), without the module of each procedure: :class:`IntentSeen` gives its kind,
job, owner, phase, since when, the steps done and its failure, and the record by value.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from streamops.exceptions import UnsafeNameError
from streamops.state.layout import StateLayout, read_json
from streamops_contract.names import check_name

log = logging.getLogger("streamops.state.intents")

Migrate = Callable[[dict[str, Any], str | None], dict[str, Any] | None]
FAILED = "failed"  # the phase of an intent closed by a step that failed having changed nothing
_RESOURCE_KEY = re.compile(r"^([A-Za-z]+)-(.+)$")


@dataclass(frozen=True)
class IntentKind:
    """One kind of intent: ``name`` (its file's name), ``scope`` (``job``: one per job;
    ``cluster``: one; ``resource``: one per declarative resource, keyed ``<Kind>-<name>``),
    ``title`` (in messages), ``first`` (the step that records one), ``finished`` (the phases
    that end it, beside :data:`FAILED`), ``steps`` (its steps in order, the next one shown;
    by mode where the modes differ), ``migrate`` (an older layout's record → this one's;
    ``None``: not one of ours) and ``watched`` (listed while unfinished: the job it stops
    does not run meanwhile)."""

    name: str
    scope: str
    title: str
    first: str = "begin"
    finished: tuple[str, ...] = ("done",)
    steps: dict[str, tuple[str, ...]] | None = None
    migrate: Migrate | None = None
    watched: bool = True

    def path(self, layout: StateLayout, key: str | None = None) -> Path:
        if self.scope == "cluster":
            return layout.intent_file(self.name)
        assert key is not None, f"the {self.title}'s intent is a {self.scope}'s"
        if self.scope == "job":
            return layout.intent_record(key, self.name)
        return inflight_dir(layout) / f"{_resource_key(key)}.json"

    def keys(self, layout: StateLayout) -> list[str | None]:
        """The keys of this kind's records present (``None``: the cluster's one)."""
        if self.scope == "cluster":
            return [None] if self.path(layout).is_file() else []
        if self.scope == "job":
            jobs = layout.jobs_dir
            found = sorted(p.parent.name for p in jobs.glob(f"*/{self.name}.json"))
            return [j for j in found if _safe(check_name, "job", j)]
        return sorted(p.stem for p in inflight_dir(layout).glob("*.json")
                      if _safe(_resource_key, p.stem))  # fmt: skip


def inflight_dir(layout: StateLayout) -> Path:
    """Where the reconcile's in-flight actions live (one per resource)."""
    return layout.root / "declarative" / "inflight"


def resource_key(kind: str, name: str) -> str:
    """The key of a resource's reconcile intent: ``<Kind>-<name>``."""
    return _resource_key(f"{kind}-{name}")


def _resource_key(key: str) -> str:
    found = _RESOURCE_KEY.match(key)
    if found is None:
        raise UnsafeNameError(f"invalid resource intent key {key!r}: <Kind>-<name>")
    check_name("resource", found.group(2))
    return key


def _safe(check: Callable[..., Any], *args: str) -> bool:
    try:
        check(*args)
    except UnsafeNameError:
        return False
    return True


# --- the kinds ---------------------------------------------------------------------------
_CHECKPOINT_DONE = {"cancel": ["begin"], "resubmit": ["begin", "stop"],
                    "done": ["begin", "stop", "resubmit", "verify"]}  # fmt: skip


def _restart(data: dict[str, Any], job: str | None) -> dict[str, Any] | None:
    """Records of the older layout: a restart from the last checkpoint was an untyped record
    (``phase`` cancel | resubmit | done, ``driver_id``, ``version``, ``owner``, no spec);
    it becomes this schema (its spec, unknown, is read again when it resubmits)."""
    if data.get("mode") == "last-checkpoint" and "spec" not in data:
        phase = str(data.get("phase") or "cancel")
        return {"job": job, "owner": data.get("owner") or "cli", "purpose": "restart",
                "mode": "last-checkpoint", "spec": {}, "version": str(data.get("version") or ""),
                "stopped_driver": data.get("driver_id"), "new_driver": data.get("new_driver"),
                "phase": phase, "done": _CHECKPOINT_DONE.get(phase, ["begin"]),
                "at": float(data.get("at") or 0),
                "times": {"begin": float(data.get("at") or 0)}}  # fmt: skip
    if "spec" not in data or ("cancel" not in data and data.get("mode") != "last-checkpoint"):
        return None
    return {"job": job, **data}


def _upgrade(data: dict[str, Any], job: str | None) -> dict[str, Any] | None:
    """A record of an earlier format (no ``new_spec``: before the spec was kept by value)
    cannot be resumed: none."""
    return data if "new_spec" in data else None


def _deploy(data: dict[str, Any], job: str | None) -> dict[str, Any]:
    """An older record (``{"phase": "submit", "at", "version", "owner"}``) is the same
    intent without its spec and driver."""
    return {"job": job, "owner": data.get("owner") or "cli", **data}


def _scale(data: dict[str, Any], key: str | None) -> dict[str, Any] | None:
    return data if "workers" in data and "owner" in data else None


def reconcile_owner(kind: str, name: str, started_at: float) -> str:
    """The owner a reconcile action records in the intents of the procedures it runs."""
    return f"reconcile:{kind}/{name}@{started_at:.3f}"


def _reconcile(data: dict[str, Any], key: str | None) -> dict[str, Any] | None:
    """The reconcile's record before it was an intent (``kind``, ``name``, ``action``,
    ``generation``, ``detail``, ``started_at``, ``updated_at``, no phase): an action in
    flight, owned as it was."""
    if "action" not in data or "kind" not in data or "name" not in data:
        return None
    if "phase" in data:
        return data
    started = float(data.get("started_at") or 0)
    return {**data, "phase": "acting", "at": float(data.get("updated_at") or started),
            "owner": reconcile_owner(str(data["kind"]), str(data["name"]), started),
            "done": [], "times": {"begin": started}}  # fmt: skip


UPGRADE_STEPS = ("start_standby", "request_savepoint", "savepoint_answered",
                 "start_new_version", "verify", "finish")  # fmt: skip
RESTART_STEPS = ("request_savepoint", "savepoint_answered", "job_stopped",
                 "start_from_savepoint", "verify")  # fmt: skip
CHECKPOINT_RESTART_STEPS = ("stop_for_restart", "resubmit", "verify")
SCALE_STEPS = ("change_workers", "confirm_in_master", "verify_batches_continue", "rebalance")

KINDS: dict[str, IntentKind] = {k.name: k for k in (
    IntentKind("upgrade", "job", "upgrade", first="plan", migrate=_upgrade,
               finished=("done", "rolled-back", "standby-failed", "aborted"),
               steps={"": UPGRADE_STEPS}),
    IntentKind("restart", "job", "restart", migrate=_restart,
               steps={"savepoint": RESTART_STEPS, "last-checkpoint": CHECKPOINT_RESTART_STEPS}),
    IntentKind("deploy", "job", "deploy", first="submit", finished=("submitted",),
               migrate=_deploy, watched=False),  # the job's own check judges its driver
    IntentKind("cluster-restart", "cluster", "cluster restart", finished=("done", "rolled-back")),
    IntentKind("scale", "cluster", "scale", migrate=_scale, steps={"": SCALE_STEPS}),
    IntentKind("reconcile", "resource", "reconcile action", finished=("done", "ended"),
               migrate=_reconcile),
)}  # fmt: skip
"""Every kind of intent record, by name."""


# --- reading any record ------------------------------------------------------------------
def read(layout: StateLayout, kind: IntentKind, key: str | None = None) -> dict[str, Any]:
    """The record of ``kind`` (for ``key``) in this layout, an older one migrated (``{}``:
    none, or not one of ours)."""
    data = read_json(kind.path(layout, key))
    if not isinstance(data, dict) or not data:
        return {}
    if kind.migrate is not None:
        data = kind.migrate(data, key) or {}
    return data


@dataclass(frozen=True)
class IntentSeen:
    """One intent record as found, of any kind."""

    kind: IntentKind
    key: str | None  # the job, the resource's ``<Kind>-<name>``, or None (the cluster's)
    data: dict[str, Any]  # the record, by value

    @property
    def job(self) -> str | None:
        return self.key if self.kind.scope == "job" else None

    @property
    def owner(self) -> str:
        return str(self.data.get("owner") or "?")

    @property
    def phase(self) -> str:
        return str(self.data.get("phase") or "new")

    @property
    def at(self) -> float:
        return float(self.data.get("at") or 0)

    @property
    def done(self) -> list[str]:
        return [str(s) for s in self.data.get("done") or []]

    @property
    def since(self) -> float:
        """When it began: its ``started_at``, or the time of its first step."""
        if self.data.get("started_at"):
            return float(self.data["started_at"])
        return float((self.data.get("times") or {}).get(self.kind.first, self.at))

    @property
    def failed_step(self) -> str | None:
        return self.data.get("failed_step")

    @property
    def failure(self) -> str | None:
        found = self.data.get("failure") or self.data.get("reason")
        return str(found) if found else None

    @property
    def closed_failed(self) -> bool:
        return self.phase == FAILED

    @property
    def finished(self) -> bool:
        return self.phase in self.kind.finished or self.closed_failed

    def next_step(self, mode: str = "") -> str | None:
        """Its first step not done yet (of ``mode``'s steps), if the kind lists its steps."""
        steps = (self.kind.steps or {}).get(mode, ())
        return next((s for s in steps if s not in self.done), None)


def records(layout: StateLayout, kinds: list[str] | None = None) -> list[IntentSeen]:
    """Every intent record under the state root (of ``kinds``, by name), finished or not; one
    that cannot be read is logged and left out."""
    out: list[IntentSeen] = []
    for kind in (KINDS[k] for k in kinds) if kinds is not None else KINDS.values():
        for key in kind.keys(layout):
            try:
                data = read(layout, kind, key)
            except (OSError, TypeError, ValueError) as exc:
                log.warning("the %s intent of %s cannot be read: %s", kind.title,
                            key or "the cluster", exc)  # fmt: skip
                continue
            if data:
                out.append(IntentSeen(kind, key, data))
    return out


def owned_by(layout: StateLayout, owner: str) -> list[IntentSeen]:
    """Every intent record ``owner`` owns (a reconcile action's procedures underneath)."""
    return [seen for seen in records(layout) if seen.owner == owner]
