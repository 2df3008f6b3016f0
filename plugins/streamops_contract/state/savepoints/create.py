"""Taking a savepoint: the stages' checkpoints copied at a batch boundary, all or nothing."""

from __future__ import annotations

import errno
import logging
import os
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from streamops_contract.exceptions import ConfigError, SavepointError, SavepointExists
from streamops_contract.names import check_name
from streamops_contract.state.checkpoint_cut import missing_state_versions
from streamops_contract.state.layout import StateLayout, write_json_atomic
from streamops_contract.state.savepoints.copying import READ_ONLY, copy_tree
from streamops_contract.state.savepoints.manifest import (
    MANIFEST,
    ChecksumMode,
    FileChecksum,
    Manifest,
    StageEntry,
    check_files,
    fsync_dir,
    load_manifest,
    remove_tree,
    summary,
)

log = logging.getLogger("streamops.state.savepoints.create")  # the savepoint store's log channel

def create_savepoint(
    layout: StateLayout, name: str, *, job: str, version: str,
    stage_dirs: Mapping[str, Path], stage_entries: Mapping[str, dict[str, Any]],
    created_by: str | None = None, cancel: bool = False, from_savepoint: str | None = None,
    checksum: ChecksumMode = "sha256", code: str | None = None,
    before_publish: Callable[[], None] | None = None,
) -> Manifest:  # fmt: skip
    """Save ``stage_dirs`` (paused at a batch boundary) as savepoint ``name``; all or nothing.

    The copy is built in a partial directory, its manifest written and verified, and only
    then renamed to ``<savepoints>/<name>``; on any failure the partial directory is removed.
    ``before_publish`` runs just before the rename: if it raises, nothing is published (the
    driver's claim of its request, which its sender may have withdrawn meanwhile).
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
            duration_s=round(time.time() - started, 3), code=code,
        )  # fmt: skip
        write_json_atomic(partial / MANIFEST, manifest.model_dump(mode="json"))
        # verify what a reader will read: the sizes (the digests are of the bytes copied;
        # a restore checks them again, before it touches any checkpoint)
        problems = check_files(partial, load_manifest(partial).checksums, deep=False)
        if problems:
            raise SavepointError(f"savepoint {name!r} failed verification: {summary(problems)}")
        if before_publish is not None:
            before_publish()
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
    stages: dict[str, StageEntry] = {}
    files: list[FileChecksum] = []
    for stage in sorted(stage_dirs):
        batch = entries[stage].get("batch_id")
        copied = copy_tree(Path(stage_dirs[stage]), partial / "stages" / stage,
                           f"stage {stage}", cut=True, batch=batch,
                           digest=checksum == "sha256", mode=READ_ONLY)  # fmt: skip
        gaps = missing_state_versions((c.rel for c in copied), batch)
        if gaps:
            raise SavepointError(f"stage {stage}: state of batch {batch} is incomplete (deleted "
                                 f"while copying?): {', '.join(gaps[:5])}")  # fmt: skip
        files += [FileChecksum(path=f"stages/{stage}/{c.rel}", bytes=c.bytes, sha256=c.sha256)
                  for c in copied]  # fmt: skip
        fields = {**entries[stage], "bytes": sum(c.bytes for c in copied), "files": len(copied)}
        try:
            stages[stage] = StageEntry(**fields)
        except ValidationError as exc:
            raise SavepointError(f"stage {stage}: invalid manifest entry: {exc}") from exc
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
