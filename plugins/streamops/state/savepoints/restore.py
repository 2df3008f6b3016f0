"""Restoring stages' checkpoints from a savepoint: every stage copied and checked first, then
all swapped in.

Each stage is copied out of the savepoint into a fresh directory beside its checkpoint, and
the copy's sizes and sha256 (where the manifest has them) are compared with the manifest
while it is made. Only when every stage's copy is complete and sound are the checkpoints
swapped, one rename each: a damaged savepoint (a truncated file, a changed byte, a missing
stage) is refused before any checkpoint is touched. The restored files are copies too, so
the savepoint stays independent of the checkpoint it seeded.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path

from streamops.exceptions import SavepointError
from streamops.state.layout import StateLayout
from streamops.state.savepoints import catalogue
from streamops_contract.state.savepoints.copying import WRITABLE, Copied, copy_tree
from streamops_contract.state.savepoints.manifest import (
    FileChecksum,
    Manifest,
    remove_tree,
    summary,
)

log = logging.getLogger(__name__)


def restore_stages(layout: StateLayout, name: str, dests: Mapping[str, Path]) -> None:
    """Replace each checkpoint dir ``dests[stage]`` by a copy of the savepoint's ``stage``;
    nothing is replaced unless every stage's copy matches the manifest."""
    manifest = catalogue.get_savepoint(layout, name)
    unknown = sorted(set(dests) - set(manifest.stages))
    if unknown:
        raise SavepointError(f"savepoint {name!r} has no stage {unknown[0]!r} (it has: "
                             f"{', '.join(sorted(manifest.stages))})")  # fmt: skip
    fresh: dict[str, Path] = {}
    try:
        for stage in sorted(dests):
            fresh[stage] = _fresh_copy(layout, manifest, stage, Path(dests[stage]))
    except BaseException:
        for path in fresh.values():
            remove_tree(path)
        raise
    log.info("savepoint %s: %d stage(s) copied and checked (sizes%s); swapping them in", name,
             len(fresh), ", sha256" if _has_digests(manifest) else "")  # fmt: skip
    for stage in sorted(fresh):
        _swap_in(fresh[stage], Path(dests[stage]))
        log.info("stage %s restored from savepoint %s into %s (%d files)", stage, name,
                 dests[stage], manifest.stages[stage].files)  # fmt: skip


def restore_stage(layout: StateLayout, name: str, stage: str, dest: Path) -> None:
    """Replace checkpoint dir ``dest`` by a checked copy of the savepoint's ``stage``."""
    restore_stages(layout, name, {stage: dest})


def _fresh_copy(layout: StateLayout, manifest: Manifest, stage: str, dest: Path) -> Path:
    dest.parent.mkdir(parents=True, exist_ok=True)
    fresh = dest.parent / f".{dest.name}.restoring-{os.getpid()}"
    remove_tree(fresh)
    prefix = f"stages/{stage}/"
    expected = {f.path[len(prefix) :]: f for f in manifest.checksums if f.path.startswith(prefix)}
    try:
        copied = copy_tree(layout.savepoint(manifest.name) / "stages" / stage, fresh,
                           f"stage {stage}", digest=True, mode=WRITABLE)  # fmt: skip
        problems = _compare(expected, copied)
        if problems:
            raise SavepointError(f"savepoint {manifest.name!r} stage {stage} is damaged, no "
                                 f"checkpoint was touched: {summary(problems)}")  # fmt: skip
    except BaseException:
        remove_tree(fresh)
        raise
    return fresh


def _compare(expected: Mapping[str, FileChecksum], copied: list[Copied]) -> list[str]:
    found = {c.rel: c for c in copied}
    problems = [f"{rel}: missing" for rel in sorted(set(expected) - set(found))]
    for rel, c in sorted(found.items()):
        want = expected.get(rel)
        if want is None:
            problems.append(f"{rel}: not in the manifest")
        elif c.bytes != want.bytes:
            problems.append(f"{rel}: {c.bytes} bytes, manifest says {want.bytes}")
        elif want.sha256 is not None and c.sha256 != want.sha256:
            problems.append(f"{rel}: sha256 differs")
    return problems


def _has_digests(manifest: Manifest) -> bool:
    return any(f.sha256 for f in manifest.checksums)


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
        remove_tree(fresh)
        raise
    if old is not None:
        remove_tree(old)
