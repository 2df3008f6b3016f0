"""Restoring a stage's checkpoint from a savepoint (hard links, swapped in at once)."""

from __future__ import annotations

import logging
import os
from datetime import datetime
from pathlib import Path

from streamops.exceptions import SavepointError
from streamops.state.layout import StateLayout
from streamops.state.savepoints import catalogue
from streamops.state.savepoints.create import Linker
from streamops.state.savepoints.manifest import check_files, remove_tree, summary

log = logging.getLogger(__name__)


def restore_stage(layout: StateLayout, name: str, stage: str, dest: Path) -> None:
    """Replace checkpoint dir ``dest`` by a hard-linked copy of the savepoint's ``stage``."""
    manifest = catalogue.get_savepoint(layout, name)
    if stage not in manifest.stages:
        raise SavepointError(f"savepoint {name!r} has no stage {stage!r} (it has: "
                             f"{', '.join(sorted(manifest.stages))})")  # fmt: skip
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    fresh = dest.parent / f".{dest.name}.restoring-{os.getpid()}"
    remove_tree(fresh)
    prefix = f"stages/{stage}/"
    expected = [f.model_copy(update={"path": f.path[len(prefix):]})
                for f in manifest.checksums if f.path.startswith(prefix)]  # fmt: skip
    try:
        Linker().tree(layout.savepoint(name) / "stages" / stage, fresh, f"stage {stage}")
        problems = check_files(fresh, expected, deep=False)
        if problems:
            raise SavepointError(f"savepoint {name!r} stage {stage}: {summary(problems)}")
    except BaseException:
        remove_tree(fresh)
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
        remove_tree(fresh)
        raise
    if old is not None:
        remove_tree(old)
