"""Which files of a Spark checkpoint belong to its state at a committed batch.

A checkpoint only grows: batch ``N`` adds ``offsets/N`` when it is planned, state store
version ``N + 1`` (``N+1.delta``, later maybe ``N+1.snapshot``; ``N+1.zip`` and
``N+1.changelog`` for RocksDB) while it runs and ``commits/N`` when it is done; a file source
adds ``sources/<i>/N``. Spark writes each file under a temporary name and renames it, and only
its maintenance deletes files (those of versions too old to be needed). So the files of the
checkpoint *at* batch ``N`` are every file whose batch or version is not newer than ``N``
(``N + 1`` for state versions), and a copy filtered that way is consistent even while the
query runs further: a live savepoint needs no pause.
"""

from __future__ import annotations

import os
import re
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path

_BATCH_FILE = re.compile(r"^\.?(\d+)(?:\.compact)?(?:\.crc)?$")
_STATE_FILE = re.compile(r"^\.?(\d+)(?:_[0-9A-Za-z-]+)?\.(delta|snapshot|zip|changelog)(?:\.crc)?$")
_BATCH_DIRS = frozenset({"offsets", "commits", "sources"})


def last_batch(folder: Path) -> int | None:
    """Highest batch id file in a checkpoint's ``offsets/`` or ``commits/`` directory."""
    if not folder.is_dir():
        return None
    ids = [int(p.name) for p in folder.iterdir() if p.name.isdigit()]
    return max(ids) if ids else None


def versioned(rel: str) -> int | None:
    """The batch id a file of a checkpoint belongs to (``rel``: path inside the checkpoint,
    ``/``-separated): batch ``N`` for ``offsets/N``, ``commits/N``, ``sources/<i>/N``; state
    version ``V`` counts as batch ``V - 1``. None for files of no batch (``metadata``,
    ``state/<op>/_metadata/...``, RocksDB's shared SST files)."""
    parts = rel.split("/")
    name = parts[-1]
    if parts[0] in _BATCH_DIRS and len(parts) <= 3 and (m := _BATCH_FILE.match(name)):
        return int(m.group(1))
    if parts[0] == "state" and (m := _STATE_FILE.match(name)):
        return int(m.group(1)) - 1
    return None


def in_cut(rel: str, batch: int | None) -> bool:
    """Whether the file ``rel`` belongs to the checkpoint as it was at committed ``batch``
    (None: no batch committed yet, only the files of no batch)."""
    owner = versioned(rel)
    return owner is None or (batch is not None and owner <= batch)


def missing_state_versions(rels: Iterable[str], batch: int | None) -> list[str]:
    """HDFS-backed state stores that cannot rebuild the version of ``batch`` from ``rels``.

    A store directory (``state/<op>/<partition>[/<store>]``) loads version ``batch + 1`` from
    its newest snapshot at or below it plus every delta after that snapshot; a gap (a delta
    deleted by Spark's maintenance while a live copy was being made) is reported as
    ``"<dir>: version <v>"``."""
    if batch is None:
        return []
    target = batch + 1
    deltas: dict[str, set[int]] = defaultdict(set)
    snapshots: dict[str, set[int]] = defaultdict(set)
    for rel in rels:
        if not rel.startswith("state/"):
            continue
        folder, name = os.path.split(rel)
        m = _STATE_FILE.match(name)
        if m is None or name.startswith(".") or m.group(2) not in ("delta", "snapshot"):
            continue
        (deltas if m.group(2) == "delta" else snapshots)[folder].add(int(m.group(1)))
    problems = []
    for folder in sorted(set(deltas) | set(snapshots)):
        base = max((v for v in snapshots[folder] if v <= target), default=0)
        have = deltas[folder]
        newest = max([v for v in have | snapshots[folder] if v <= target], default=0)
        gap = next((v for v in range(base + 1, newest + 1) if v not in have), None)
        if gap is not None:
            problems.append(f"{folder}: version {gap}")
    return problems
