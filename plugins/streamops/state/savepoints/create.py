"""Taking a savepoint: the stages' checkpoints hard-linked at a batch boundary, all or nothing."""

from __future__ import annotations

import errno
import logging
import os
import shutil
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from streamops.exceptions import ConfigError, SavepointError, SavepointExists
from streamops.names import check_name
from streamops.state.checkpoint_cut import in_cut, missing_state_versions, versioned
from streamops.state.layout import StateLayout, write_json_atomic
from streamops.state.savepoints.manifest import (
    MANIFEST,
    ChecksumMode,
    FileChecksum,
    Manifest,
    StageEntry,
    check_files,
    fsync_dir,
    is_spark_temp,
    load_manifest,
    raise_error,
    remove_tree,
    sha256_digests,
    summary,
)

log = logging.getLogger(__name__)

_NO_LINK = frozenset({errno.EXDEV, errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EMLINK})


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
    remove_tree(partial)  # left by a dead process that had our pid
    try:
        stages, files = _copy_stages(partial, stage_dirs, stage_entries, checksum)
        manifest = Manifest(
            name=name, job=job, version=version, created_at=started, created_by=created_by,
            cancel=cancel, stages=stages, checksums=files, bytes=sum(f.bytes for f in files),
            files=len(files), from_savepoint=from_savepoint,
            duration_s=round(time.time() - started, 3),
        )  # fmt: skip
        write_json_atomic(partial / MANIFEST, manifest.model_dump(mode="json"))
        written = load_manifest(partial).checksums  # verify what a reader will read
        problems = check_files(partial, written, deep=checksum == "sha256")
        if problems:
            raise SavepointError(f"savepoint {name!r} failed verification: {summary(problems)}")
        _publish(partial, final)
    except BaseException as exc:
        remove_tree(partial)
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
    linker = Linker()
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
    digests = sha256_digests(partial, [rel for rel, _ in listed]) if checksum == "sha256" else {}
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
    fsync_dir(final.parent)


class Linker:
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
            for dirpath, dirnames, filenames in os.walk(top, onerror=raise_error):
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
