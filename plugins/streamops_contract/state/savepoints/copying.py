"""Copying a checkpoint tree file by file, with each file's sha256 taken from the bytes copied.

A savepoint holds copies, never hard links of the live checkpoint's files: a link shares
its inode, so a savepoint file truncated or edited in place (by hand, by a bad block, by a
tool) would damage the running job's checkpoint too, and the other way round. Copies cost
time per byte; ``tests/perf/bench_savepoint_copy.py`` measures it (docs/performance.md).
The copy reads each file once: the bytes written are the bytes hashed. The files of a
savepoint are made read-only (``0444``); those restored into a checkpoint are writable.
"""

from __future__ import annotations

import hashlib
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from streamops_contract.exceptions import SavepointError
from streamops_contract.state.checkpoint_cut import in_cut, versioned
from streamops_contract.state.savepoints.manifest import is_spark_temp, raise_error

_CHUNK = 1 << 20
READ_ONLY = 0o444
WRITABLE = 0o644


@dataclass(frozen=True)
class Copied:
    """One file copied: its path relative to the copy's root, size, sha256 when taken."""

    rel: str
    bytes: int
    sha256: str | None


def copy_tree(
    src: Path, dst: Path, what: str, *, cut: bool = False, batch: int | None = None,
    digest: bool = True, mode: int = READ_ONLY,
) -> list[Copied]:  # fmt: skip
    """Copy every file of ``src`` into ``dst`` (which must not hold them yet), sorted by path.

    With ``cut``, only the files of the checkpoint as it was at committed ``batch``
    (:mod:`streamops_contract.state.checkpoint_cut`), while the query may go on writing: a file of
    some batch that vanished meanwhile was deleted by Spark's maintenance as too old and is
    left out (the state chain check then tells whether it was needed). Spark's temporary
    files are skipped. ``SavepointError`` names the file an ``OSError`` (a full disk, a
    read error) stopped at.
    """
    if not src.is_dir():
        raise SavepointError(f"{what}: checkpoint directory {src} does not exist")
    todo = _listing(src, dst, what, cut, batch)
    workers = max(1, min(8, 2 * (os.cpu_count() or 1), len(todo)))

    def batch_of(part: list[str]) -> list[Copied | None]:
        buf = bytearray(_CHUNK)
        return [_copy_one(src, dst, rel, what, buf, digest, mode, cut) for rel in part]

    with ThreadPoolExecutor(max_workers=workers) as pool:
        parts = list(pool.map(batch_of, [todo[i::workers] for i in range(workers)]))
    done = [c for part in parts for c in part if c is not None]
    return sorted(done, key=lambda c: c.rel)


def _listing(src: Path, dst: Path, what: str, cut: bool, batch: int | None) -> list[str]:
    """The files to copy, relative to ``src``; the directories are made in ``dst``."""
    top, out = str(src), []
    try:
        for dirpath, dirnames, filenames in os.walk(top, onerror=raise_error):
            dirnames.sort()
            rel = dirpath[len(top) + 1 :].replace(os.sep, "/")
            os.makedirs(os.path.join(dst, rel) if rel else dst, exist_ok=True)
            for fn in sorted(filenames):
                path = f"{rel}/{fn}" if rel else fn
                if not is_spark_temp(fn) and (not cut or in_cut(path, batch)):
                    out.append(path)
    except OSError as exc:
        where = exc.filename or src
        raise SavepointError(f"{what}: cannot copy {where}: {exc.strerror or exc}") from exc
    return out


def _copy_one(
    src: Path, dst: Path, rel: str, what: str, buf: bytearray, digest: bool, mode: int,
    cut: bool,
) -> Copied | None:  # fmt: skip
    """Copy one file (plain ``os`` calls: per file, pathlib costs more than the copy)."""
    try:
        return copy_file(os.path.join(src, rel), os.path.join(dst, rel), rel, buf, digest, mode)
    except FileNotFoundError:
        if cut and versioned(rel) is not None and not os.path.exists(os.path.join(src, rel)):
            return None  # deleted by Spark's maintenance while we copied: too old
        raise SavepointError(f"{what}: cannot copy file {rel}: it vanished") from None
    except OSError as exc:
        raise SavepointError(f"{what}: cannot copy file {rel}: {exc.strerror or exc}") from exc


def copy_file(
    src: str, dst: str, rel: str, buf: bytearray, digest: bool, mode: int
) -> Copied:  # fmt: skip
    """Copy ``src`` to the new file ``dst`` (created with ``mode``), hashing what it copies."""
    view, sha = memoryview(buf), hashlib.sha256() if digest else None
    size = 0
    with open(src, "rb", buffering=0) as fin:
        fd = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
        with open(fd, "wb", buffering=0) as fout:
            while n := fin.readinto(buf):
                chunk = view[:n]
                if sha is not None:
                    sha.update(chunk)
                written = 0
                while written < n:
                    written += fout.write(chunk[written:]) or 0
                size += n
    if os.stat(dst).st_mode & 0o777 != mode:  # the umask took bits away: say what we meant
        os.chmod(dst, mode)
    return Copied(rel, size, sha.hexdigest() if sha is not None else None)
