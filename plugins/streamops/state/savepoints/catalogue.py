"""The savepoints of a state root: listing, finding, verifying, deleting, and the retention."""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path

from streamops.exceptions import (
    ConfigError,
    SavepointError,
    SavepointNotFound,
    SavepointProtected,
)
from streamops.state.job_status import JobStatus
from streamops.state.layout import StateLayout, read_json
from streamops_contract.names import check_name
from streamops_contract.state.savepoints.manifest import (
    Manifest,
    SavepointInfo,
    check_files,
    load_manifest,
    remove_tree,
    summary,
)

log = logging.getLogger(__name__)

STALE_AFTER_S = 3600.0
LIVE_JOB_STATES = frozenset({"STARTING", "RUNNING"})


@dataclass(frozen=True)
class RetentionPolicy:
    """Per job: keep the newest ``keep_last``, drop those older than ``max_age_s``."""

    keep_last: int | None = None
    max_age_s: float | None = None

    def __post_init__(self) -> None:
        if self.keep_last is not None and self.keep_last < 1:
            raise ConfigError(f"keep_last must be at least 1, got {self.keep_last}")
        if self.max_age_s is not None and self.max_age_s <= 0:
            raise ConfigError(f"max_age_s must be positive, got {self.max_age_s}")


# --- reading ------------------------------------------------------------------------------
def list_savepoints(
    layout: StateLayout, job: str | None = None, *, clean: bool = True
) -> list[SavepointInfo]:
    """Complete savepoints (of ``job``), newest first; removes stale partial directories
    unless ``clean`` is false (a read-only reader such as the dashboard)."""
    if clean:
        remove_stale(layout)
    infos = []
    for path in _savepoint_dirs(layout):
        try:
            m = load_manifest(path)
        except SavepointError as exc:
            log.warning("not listed: %s; delete it (delete-snapshot) if it is useless", exc)
            continue
        if job is None or m.job == job:
            infos.append(SavepointInfo(path.name, m.job, m.version, m.created_at, m.bytes,
                                       tuple(sorted(m.stages)), path, m.code))  # fmt: skip
    return sorted(infos, key=lambda i: (i.created_at, i.name), reverse=True)


def get_savepoint(layout: StateLayout, name: str, *, job: str | None = None) -> Manifest:
    """The manifest of savepoint ``name`` (which must belong to ``job`` when given)."""
    path = layout.savepoint(name)
    if not path.is_dir():
        raise SavepointNotFound(_not_found(layout, name, job))
    manifest = load_manifest(path)
    if job is not None and manifest.job != job:
        raise SavepointNotFound(f"savepoint {name!r} belongs to job {manifest.job!r}, not "
                                f"{job!r}; {_existing(layout, job)}")  # fmt: skip
    return manifest


def check_savepoint(layout: StateLayout, name: str, *, deep: bool = False) -> list[str]:
    """Problems of savepoint ``name`` (empty when sound); ``deep`` compares checksums."""
    path = layout.savepoint(name)
    if not path.is_dir():
        raise SavepointNotFound(_not_found(layout, name, None))
    try:
        manifest = load_manifest(path)
    except SavepointError as exc:
        return [str(exc)]
    problems = [f"manifest names {manifest.name!r}"] if manifest.name != name else []
    problems += [f"stages/{s}: missing" for s in manifest.stages
                 if not (path / "stages" / s).is_dir()]  # fmt: skip
    return problems + check_files(path, manifest.checksums, deep=deep)


def verify_savepoint(layout: StateLayout, name: str, deep: bool = True) -> Manifest:
    """The manifest of a sound savepoint; ``SavepointError`` listing what is damaged."""
    problems = check_savepoint(layout, name, deep=deep)
    if problems:
        raise SavepointError(f"savepoint {name!r} is damaged: {summary(problems)}")
    return get_savepoint(layout, name)


def _savepoint_dirs(layout: StateLayout) -> list[Path]:
    if not layout.savepoints_dir.is_dir():
        return []
    return [p for p in layout.savepoints_dir.iterdir()
            if not p.name.startswith(".") and p.is_dir() and _valid(p.name)]  # fmt: skip


def _valid(name: str) -> bool:
    try:
        check_name("savepoint", name)
    except ConfigError:
        return False
    return True


def _not_found(layout: StateLayout, name: str, job: str | None) -> str:
    return f"no savepoint named {name!r} in {layout.savepoints_dir}; {_existing(layout, job)}"


def _existing(layout: StateLayout, job: str | None) -> str:
    names = [i.name for i in list_savepoints(layout, job)]
    whose = f" of job {job!r}" if job else ""
    if not names:
        return f"there are no savepoints{whose}"
    more = f" (+{len(names) - 10} more)" if len(names) > 10 else ""
    return f"existing savepoints{whose}: {', '.join(names[:10])}{more}"


# --- deleting and retention ---------------------------------------------------------------
def delete_savepoint(layout: StateLayout, name: str, *, protected: Collection[str] = ()) -> None:
    """Delete a savepoint; ``protected`` (a mapping may give the reason) are refused."""
    path = layout.savepoint(name)
    if name in protected:
        why = protected[name] if isinstance(protected, Mapping) else "a running job needs it"
        raise SavepointProtected(f"savepoint {name!r} is protected: {why}; stop or upgrade "
                                 "that job first")  # fmt: skip
    trash = layout.savepoints_dir / f".deleting-{name}"
    remove_tree(trash)  # an interrupted earlier delete of the same name
    try:
        os.rename(path, trash)
    except FileNotFoundError:
        raise SavepointNotFound(_not_found(layout, name, None)) from None
    except OSError as exc:
        raise SavepointError(f"cannot delete savepoint {name!r}: {exc}") from exc
    log.info("deleting savepoint %s", name)
    remove_tree(trash)


def apply_retention(
    layout: StateLayout, policy: RetentionPolicy, *, protected: Collection[str] = (),
    now: float | None = None, dry_run: bool = False,
) -> list[str]:  # fmt: skip
    """Delete the savepoints ``policy`` lets go; the newest of each job and ``protected`` stay."""
    now = time.time() if now is None else now
    by_job: dict[str, list[SavepointInfo]] = {}
    for info in list_savepoints(layout):
        by_job.setdefault(info.job, []).append(info)
    doomed = []
    for job, infos in sorted(by_job.items()):
        for rank, info in enumerate(infos[1:], start=1):
            why = _expiry(policy, rank, now - info.created_at)
            if why is None:
                continue
            if info.name in protected:
                log.info("retention keeps savepoint %s of job %s (%s) because it is protected",
                         info.name, job, why)  # fmt: skip
                continue
            log.info("retention %s savepoint %s of job %s: %s",
                     "would delete" if dry_run else "deletes", info.name, job, why)  # fmt: skip
            if not dry_run:
                delete_savepoint(layout, info.name, protected=protected)
            doomed.append(info.name)
    return doomed


def _expiry(policy: RetentionPolicy, rank: int, age_s: float) -> str | None:
    if policy.keep_last is not None and rank >= policy.keep_last:
        return f"beyond the newest {policy.keep_last}"
    if policy.max_age_s is not None and age_s > policy.max_age_s:
        return f"{age_s:.0f} s old, more than {policy.max_age_s:g} s"
    return None


def protected_savepoints(layout: StateLayout) -> dict[str, str]:
    """Savepoints that STARTING or RUNNING jobs were started from, with the reason."""
    out: dict[str, str] = {}
    for status in sorted(layout.jobs_dir.glob("*/status.json")):
        try:  # not JobStatus.load, which takes an unreadable file as none: refuse instead
            job = JobStatus.parse(read_json(status))
        except (OSError, ValueError) as exc:
            raise SavepointError(f"cannot read {status} ({exc}), so cannot tell which savepoints "
                                 "running jobs need; fix or remove it first") from exc  # fmt: skip
        if job.state in LIVE_JOB_STATES and job.from_savepoint:
            why = f"job {status.parent.name!r} ({job.state}) was started from it"
            out.setdefault(job.from_savepoint, why)
    return out


def remove_stale(layout: StateLayout, now: float | None = None) -> list[str]:
    """Remove partial and half-deleted directories older than an hour (crashed writers)."""
    now = time.time() if now is None else now
    removed = []
    for path in layout.savepoints_dir.glob(".*"):
        if ".partial-" not in path.name and not path.name.startswith(".deleting-"):
            continue
        try:
            age = now - path.stat().st_mtime
        except FileNotFoundError:
            continue
        if age > STALE_AFTER_S:
            log.warning("removing %s, left %.0f s ago by an interrupted savepoint or delete",
                        path, age)  # fmt: skip
            remove_tree(path)
            removed.append(path.name)
    return removed
