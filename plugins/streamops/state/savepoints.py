"""The savepoint store: consistent copies of a job's stage checkpoints, with a manifest.

The job runtime takes a savepoint inside the Spark driver once every stage is paused at a
batch boundary; the ops side (CLI, Airflow) lists, verifies, retains, deletes and restores::

    <root>/savepoints/<name>/manifest.json
    <root>/savepoints/<name>/stages/<stage>/...     the stage's checkpoint files
    <root>/savepoints/.<name>.partial-<pid>/         being written, never listed
    <root>/savepoints/.deleting-<name>/              being deleted, never listed

Files are hard links, not copies: Spark never rewrites a checkpoint file in place (it
writes a temporary file and renames it over), so a link keeps the bytes of the boundary
while the job goes on, and a savepoint costs time per file, not per byte. Only the
``sha256`` checksums read the bytes; ``checksum="size"`` records sizes only.
"""

from __future__ import annotations

import errno
import hashlib
import logging
import os
import shutil
import time
from collections.abc import Collection, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from streamops.exceptions import (
    ConfigError,
    SavepointError,
    SavepointExists,
    SavepointNotFound,
    SavepointProtected,
)
from streamops.names import check_name
from streamops.state.checkpoint_cut import in_cut, missing_state_versions, versioned
from streamops.state.layout import StateLayout, read_json, write_json_atomic

log = logging.getLogger("streamops.state.savepoints")

MANIFEST = "manifest.json"
STALE_AFTER_S = 3600.0
LIVE_JOB_STATES = frozenset({"STARTING", "RUNNING"})
_CHUNK = 1 << 20
_NO_LINK = frozenset({errno.EXDEV, errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EMLINK})
ChecksumMode = Literal["sha256", "size"]


class FileChecksum(BaseModel):
    """One file of a savepoint: path relative to the savepoint dir, size, sha256 if taken."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    path: str
    sha256: str | None = None
    bytes: int = Field(ge=0)

    @field_validator("path")
    @classmethod
    def _relative(cls, value: str) -> str:
        if not value or value.startswith("/") or ".." in value.split("/"):
            raise ValueError(f"file path {value!r} must stay inside the savepoint")
        return value


class StageEntry(BaseModel):
    """What a savepoint holds of one stage."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    batch_id: int | None = None  # last committed batch
    sources: list[dict[str, Any]] = Field(default_factory=list)  # committed end offsets
    stateful: bool = False
    state: dict[str, Any] | None = None  # operators and schemas
    descriptor: dict[str, Any] | None = None
    bytes: int = Field(default=0, ge=0)
    files: int = Field(default=0, ge=0)


class Manifest(BaseModel):
    """``manifest.json``: what was saved, from which job version, and how to check it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    format: int = 1
    name: str
    job: str
    version: str
    created_at: float
    created_by: str | None = None
    cancel: bool = False
    stages: dict[str, StageEntry]
    checksums: list[FileChecksum]
    bytes: int = Field(ge=0)
    files: int = Field(ge=0)
    from_savepoint: str | None = None
    duration_s: float | None = None

    def positions(self) -> dict[str, list[tuple[str, dict[str, Any]]]]:
        """Per source id, ``(stage, committed offset)`` of every stage reading that source."""
        out: dict[str, list[tuple[str, dict[str, Any]]]] = {}
        for stage in sorted(self.stages):
            for i, offset in enumerate(self.stages[stage].sources):
                source = str(offset.get("source") or f"{stage}#{i}")
                out.setdefault(source, []).append((stage, offset))
        return out


@dataclass(frozen=True)
class SavepointInfo:
    """One line of a savepoint listing."""

    name: str
    job: str
    version: str
    created_at: float
    bytes: int
    stages: tuple[str, ...]
    path: Path


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


# --- writing ------------------------------------------------------------------------------
def create_savepoint(
    layout: StateLayout, name: str, *, job: str, version: str,
    stage_dirs: Mapping[str, Path], stage_entries: Mapping[str, dict[str, Any]],
    created_by: str | None = None, cancel: bool = False, from_savepoint: str | None = None,
    checksum: ChecksumMode = "sha256",
) -> Manifest:  # fmt: skip
    """Save ``stage_dirs`` (paused at a batch boundary) as savepoint ``name``; all or nothing.

    The copy is built in a partial directory, its manifest written and verified, and only
    then renamed to ``<savepoints>/<name>``; on any failure the partial directory is removed.
    """
    final = layout.savepoint(name)
    check_name("job", job)
    if checksum not in ("sha256", "size"):
        raise ConfigError(f"checksum must be 'sha256' or 'size', got {checksum!r}")
    _check_stage_args(stage_dirs, stage_entries)
    if final.exists():
        raise SavepointExists(f"savepoint {name!r} exists already: pick another name or "
                              "delete it first (delete-snapshot)")  # fmt: skip
    partial = layout.savepoints_dir / f".{name}.partial-{os.getpid()}"
    started = time.time()
    _remove_tree(partial)  # left by a dead process that had our pid
    try:
        stages, files = _copy_stages(partial, stage_dirs, stage_entries, checksum)
        manifest = Manifest(
            name=name, job=job, version=version, created_at=started, created_by=created_by,
            cancel=cancel, stages=stages, checksums=files, bytes=sum(f.bytes for f in files),
            files=len(files), from_savepoint=from_savepoint,
            duration_s=round(time.time() - started, 3),
        )  # fmt: skip
        write_json_atomic(partial / MANIFEST, manifest.model_dump(mode="json"))
        written = _load(partial).checksums  # verify what a reader will read
        problems = _check_files(partial, written, deep=checksum == "sha256")
        if problems:
            raise SavepointError(f"savepoint {name!r} failed verification: {_summary(problems)}")
        _publish(partial, final)
    except BaseException as exc:
        _remove_tree(partial)
        if isinstance(exc, OSError | ValidationError):
            raise SavepointError(f"savepoint {name!r} of job {job!r} failed: {exc}") from exc
        raise
    log.info("savepoint %s of job %s v%s: %d stages, %d files, %d bytes in %.2f s", name,
             job, version, len(stages), manifest.files, manifest.bytes,
             time.time() - started)  # fmt: skip
    return manifest


def _check_stage_args(dirs: Mapping[str, Path], entries: Mapping[str, Any]) -> None:
    for stage in dirs:
        check_name("stage", stage)
    if not dirs:
        raise SavepointError("a savepoint needs at least one stage; none was given")
    if set(dirs) != set(entries):
        raise SavepointError(f"stage_dirs {sorted(dirs)} and stage_entries {sorted(entries)} "
                             "must name the same stages")  # fmt: skip


def _copy_stages(
    partial: Path, stage_dirs: Mapping[str, Path], entries: Mapping[str, dict[str, Any]],
    checksum: ChecksumMode,
) -> tuple[dict[str, StageEntry], list[FileChecksum]]:  # fmt: skip
    linker = _Linker()
    stages: dict[str, StageEntry] = {}
    listed: list[tuple[str, int]] = []
    for stage in sorted(stage_dirs):
        batch = entries[stage].get("batch_id")
        copied = linker.tree(Path(stage_dirs[stage]), partial / "stages" / stage,
                             f"stage {stage}", cut=True, batch=batch)  # fmt: skip
        gaps = missing_state_versions((rel for rel, _ in copied), batch)
        if gaps:
            raise SavepointError(f"stage {stage}: state of batch {batch} is incomplete (deleted "
                                 f"while copying?): {', '.join(gaps[:5])}")  # fmt: skip
        listed += [(f"stages/{stage}/{rel}", size) for rel, size in copied]
        fields = {**entries[stage], "bytes": sum(s for _, s in copied), "files": len(copied)}
        try:
            stages[stage] = StageEntry(**fields)
        except ValidationError as exc:
            raise SavepointError(f"stage {stage}: invalid manifest entry: {exc}") from exc
    if linker.copied:
        log.warning("%d of %d files copied instead of hard-linked", linker.copied, len(listed))
    digests = _digests(partial, [rel for rel, _ in listed]) if checksum == "sha256" else {}
    files = [FileChecksum(path=rel, bytes=size, sha256=digests.get(rel)) for rel, size in listed]
    return stages, files


def _publish(partial: Path, final: Path) -> None:
    if final.exists():
        raise SavepointExists(f"savepoint {final.name!r} was created meanwhile by another writer")
    try:
        os.rename(partial, final)
    except OSError as exc:
        if exc.errno in (errno.EEXIST, errno.ENOTEMPTY):
            raise SavepointExists(f"savepoint {final.name!r} was created meanwhile") from exc
        raise
    _fsync_dir(final.parent)


class _Linker:
    """Recreates a tree with hard links; copies where the file system cannot link."""

    def __init__(self) -> None:
        self.copied = 0

    def tree(
        self, src: Path, dst: Path, what: str, *, cut: bool = False, batch: int | None = None
    ) -> list[tuple[str, int]]:  # fmt: skip
        """Link ``src`` into ``dst``; ``(path relative to dst, size)`` of every file.

        With ``cut``, only the files of the checkpoint as it was at that committed batch
        (:mod:`streamops.state.checkpoint_cut`), while the query may go on writing: a file of some
        batch that vanished meanwhile was deleted by Spark's maintenance as too old and is
        left out (the state chain check then tells whether it was needed).
        Plain ``os`` calls on strings: per file, pathlib costs more than the link itself.
        """
        if not src.is_dir():
            raise SavepointError(f"{what}: checkpoint directory {src} does not exist")
        top, out, current = str(src), [], ""
        try:
            for dirpath, dirnames, filenames in os.walk(top, onerror=_raise):
                dirnames.sort()
                rel = dirpath[len(top) + 1 :]
                target = os.path.join(dst, rel) if rel else str(dst)
                os.makedirs(target, exist_ok=True)
                for fn in sorted(filenames):
                    if is_spark_temp(fn):
                        continue
                    current = (f"{rel}/{fn}" if rel else fn).replace(os.sep, "/")
                    if cut and not in_cut(current, batch):
                        continue
                    try:
                        size = self._file(os.path.join(dirpath, fn), os.path.join(target, fn))
                    except FileNotFoundError:
                        if not cut or versioned(current) is None:
                            raise
                        continue
                    out.append((current, size))
        except OSError as exc:
            where = f"file {current}" if current else str(exc.filename or src)
            raise SavepointError(f"{what}: cannot copy {where}: {exc.strerror or exc}") from exc
        return out

    def _file(self, src: str, dst: str) -> int:
        try:
            os.link(src, dst)
        except OSError as exc:
            if exc.errno not in _NO_LINK:
                raise
            if not self.copied:
                log.warning("cannot hard-link %s (%s): copying files", src, exc.strerror)
            self.copied += 1
            shutil.copy2(src, dst)
        return os.stat(dst).st_size


def is_spark_temp(filename: str) -> bool:
    """A file Spark is still writing (``.<name>.tmp``) or the ``.crc`` of one."""
    return filename.startswith(".") and filename.endswith((".tmp", ".tmp.crc"))


def sha256_file(path: Path, buf: bytearray | None = None) -> str:
    """The sha256 of a file, read in 1 MiB chunks."""
    buf = buf if buf is not None else bytearray(_CHUNK)
    view, digest = memoryview(buf), hashlib.sha256()
    with open(path, "rb", buffering=0) as fh:
        while n := fh.readinto(buf):
            digest.update(view[:n])
    return digest.hexdigest()


def _digests(root: Path, rels: list[str]) -> dict[str, str]:
    """sha256 of ``root/rel`` for each rel; one batch per thread (hashlib drops the GIL)."""
    workers = max(1, min(8, os.cpu_count() or 1, len(rels)))

    def batch(part: list[str]) -> list[tuple[str, str]]:
        buf = bytearray(_CHUNK)
        out = []
        for rel in part:
            try:
                out.append((rel, sha256_file(root / rel, buf)))
            except OSError as exc:
                raise SavepointError(f"cannot checksum {rel}: {exc}") from exc
        return out

    with ThreadPoolExecutor(max_workers=workers) as pool:
        parts = pool.map(batch, [rels[i::workers] for i in range(workers)])
        return {rel: d for part in parts for rel, d in part}


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
            m = _load(path)
        except SavepointError as exc:
            log.warning("not listed: %s; delete it (delete-snapshot) if it is useless", exc)
            continue
        if job is None or m.job == job:
            infos.append(SavepointInfo(path.name, m.job, m.version, m.created_at, m.bytes,
                                       tuple(sorted(m.stages)), path))  # fmt: skip
    return sorted(infos, key=lambda i: (i.created_at, i.name), reverse=True)


def get_savepoint(layout: StateLayout, name: str, *, job: str | None = None) -> Manifest:
    """The manifest of savepoint ``name`` (which must belong to ``job`` when given)."""
    path = layout.savepoint(name)
    if not path.is_dir():
        raise SavepointNotFound(_not_found(layout, name, job))
    manifest = _load(path)
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
        manifest = _load(path)
    except SavepointError as exc:
        return [str(exc)]
    problems = [f"manifest names {manifest.name!r}"] if manifest.name != name else []
    problems += [f"stages/{s}: missing" for s in manifest.stages
                 if not (path / "stages" / s).is_dir()]  # fmt: skip
    return problems + _check_files(path, manifest.checksums, deep=deep)


def verify_savepoint(layout: StateLayout, name: str, deep: bool = True) -> Manifest:
    """The manifest of a sound savepoint; ``SavepointError`` listing what is damaged."""
    problems = check_savepoint(layout, name, deep=deep)
    if problems:
        raise SavepointError(f"savepoint {name!r} is damaged: {_summary(problems)}")
    return get_savepoint(layout, name)


def _check_files(root: Path, files: Iterable[FileChecksum], *, deep: bool) -> list[str]:
    problems, to_hash = [], []
    for f in files:
        try:
            size = os.stat(os.path.join(root, f.path)).st_size
        except OSError as exc:
            problems.append(f"{f.path}: {exc.strerror or exc}")
            continue
        if size != f.bytes:
            problems.append(f"{f.path}: {size} bytes, manifest says {f.bytes}")
        elif deep and f.sha256 is not None:
            to_hash.append(f)
    digests = _digests(root, [f.path for f in to_hash]) if to_hash else {}
    return problems + [f"{f.path}: sha256 differs" for f in to_hash if digests[f.path] != f.sha256]


def _load(path: Path) -> Manifest:
    try:
        doc = read_json(path / MANIFEST)
        if doc is None:
            raise SavepointError(f"savepoint {path.name!r}: {MANIFEST} is missing")
        return Manifest.model_validate(doc)
    except (OSError, ValueError) as exc:  # ValidationError is a ValueError
        raise SavepointError(f"savepoint {path.name!r}: unreadable {MANIFEST}: {exc}") from exc


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


def _summary(problems: list[str]) -> str:
    more = f" (+{len(problems) - 5} more)" if len(problems) > 5 else ""
    return f"{len(problems)} problem(s): " + "; ".join(problems[:5]) + more


# --- deleting and retention ---------------------------------------------------------------
def delete_savepoint(layout: StateLayout, name: str, *, protected: Collection[str] = ()) -> None:
    """Delete a savepoint; ``protected`` (a mapping may give the reason) are refused."""
    path = layout.savepoint(name)
    if name in protected:
        why = protected[name] if isinstance(protected, Mapping) else "a running job needs it"
        raise SavepointProtected(f"savepoint {name!r} is protected: {why}; stop or upgrade "
                                 "that job first")  # fmt: skip
    trash = layout.savepoints_dir / f".deleting-{name}"
    _remove_tree(trash)  # an interrupted earlier delete of the same name
    try:
        os.rename(path, trash)
    except FileNotFoundError:
        raise SavepointNotFound(_not_found(layout, name, None)) from None
    except OSError as exc:
        raise SavepointError(f"cannot delete savepoint {name!r}: {exc}") from exc
    log.info("deleting savepoint %s", name)
    _remove_tree(trash)


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
        try:
            doc = read_json(status)
        except (OSError, ValueError) as exc:
            raise SavepointError(f"cannot read {status} ({exc}), so cannot tell which savepoints "
                                 "running jobs need; fix or remove it first") from exc  # fmt: skip
        live = isinstance(doc, dict) and doc.get("state") in LIVE_JOB_STATES
        if live and doc.get("from_savepoint"):
            why = f"job {status.parent.name!r} ({doc['state']}) was started from it"
            out.setdefault(str(doc["from_savepoint"]), why)
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
            _remove_tree(path)
            removed.append(path.name)
    return removed


# --- restoring ----------------------------------------------------------------------------
def restore_stage(layout: StateLayout, name: str, stage: str, dest: Path) -> None:
    """Replace checkpoint dir ``dest`` by a hard-linked copy of the savepoint's ``stage``."""
    manifest = get_savepoint(layout, name)
    if stage not in manifest.stages:
        raise SavepointError(f"savepoint {name!r} has no stage {stage!r} (it has: "
                             f"{', '.join(sorted(manifest.stages))})")  # fmt: skip
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    fresh = dest.parent / f".{dest.name}.restoring-{os.getpid()}"
    _remove_tree(fresh)
    prefix = f"stages/{stage}/"
    expected = [f.model_copy(update={"path": f.path[len(prefix):]})
                for f in manifest.checksums if f.path.startswith(prefix)]  # fmt: skip
    try:
        _Linker().tree(layout.savepoint(name) / "stages" / stage, fresh, f"stage {stage}")
        problems = _check_files(fresh, expected, deep=False)
        if problems:
            raise SavepointError(f"savepoint {name!r} stage {stage}: {_summary(problems)}")
    except BaseException:
        _remove_tree(fresh)
        raise
    _swap_in(fresh, dest)
    log.info("stage %s restored from savepoint %s into %s (%d files)", stage, name, dest,
             len(expected))  # fmt: skip


def _swap_in(fresh: Path, dest: Path) -> None:
    old = None
    if dest.exists():
        old = dest.with_name(f"{dest.name}.replaced-{datetime.now():%Y%m%d%H%M%S%f}")
        os.rename(dest, old)
    try:
        os.rename(fresh, dest)
    except OSError:
        if old is not None:
            os.rename(old, dest)
        _remove_tree(fresh)
        raise
    if old is not None:
        _remove_tree(old)


# --- file system helpers ------------------------------------------------------------------
def _raise(exc: OSError) -> None:
    raise exc


def _remove_tree(path: Path) -> None:
    try:
        shutil.rmtree(path)
    except FileNotFoundError:
        return
    except OSError as exc:
        log.warning("could not remove %s (%s); it is removed once stale", path, exc)


def _fsync_dir(path: Path) -> None:
    """Persist a rename; a failure is logged, the rename itself has happened."""
    try:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as exc:
        log.warning("could not fsync %s (%s); a crash may lose the last rename", path, exc)
