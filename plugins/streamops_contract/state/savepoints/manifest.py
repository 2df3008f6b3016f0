"""What a savepoint holds (``manifest.json``) and how its files are read and checked."""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from streamops_contract.exceptions import SavepointError
from streamops_contract.state.layout import read_json

log = logging.getLogger("streamops.state.savepoints.manifest")  # the savepoint store's log channel

MANIFEST = "manifest.json"
_CHUNK = 1 << 20
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
    code: str | None = None  # a job's own code it was taken with: its zip (``<job>-<hash>.zip``)

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
    code: str | None = None


def load_manifest(path: Path) -> Manifest:
    try:
        doc = read_json(path / MANIFEST)
        if doc is None:
            raise SavepointError(f"savepoint {path.name!r}: {MANIFEST} is missing")
        return Manifest.model_validate(doc)
    except (OSError, ValueError) as exc:  # ValidationError is a ValueError
        raise SavepointError(f"savepoint {path.name!r}: unreadable {MANIFEST}: {exc}") from exc


def check_files(root: Path, files: Iterable[FileChecksum], *, deep: bool) -> list[str]:
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
    digests = sha256_digests(root, [f.path for f in to_hash]) if to_hash else {}
    return problems + [f"{f.path}: sha256 differs" for f in to_hash if digests[f.path] != f.sha256]


def summary(problems: list[str]) -> str:
    more = f" (+{len(problems) - 5} more)" if len(problems) > 5 else ""
    return f"{len(problems)} problem(s): " + "; ".join(problems[:5]) + more


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


def sha256_digests(root: Path, rels: list[str]) -> dict[str, str]:
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


# --- file system helpers ------------------------------------------------------------------
def raise_error(exc: OSError) -> None:
    raise exc


def remove_tree(path: Path) -> None:
    try:
        shutil.rmtree(path)
    except FileNotFoundError:
        return
    except OSError as exc:
        log.warning("could not remove %s (%s); it is removed once stale", path, exc)


def fsync_dir(path: Path) -> None:
    """Persist a rename; a failure is logged, the rename itself has happened."""
    try:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as exc:
        log.warning("could not fsync %s (%s); a crash may lose the last rename", path, exc)
