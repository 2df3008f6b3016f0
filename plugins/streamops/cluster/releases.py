"""Classpath jar releases: versioned directories of jars, one of them active.

A release is a directory ``<config>/jars/releases/<release>/`` of jars (built by
``scripts/build_jars.sh``). The active one is the symlink ``<state>/lib/active``; the
cluster's extra classpath is ``<state>/lib/active/*`` (see
:func:`streamops.cluster.daemons.base_env`), so drivers and executors started after a switch
load the new jars. A switch replaces the symlink atomically (new link beside it, rename) and
records the active and previous release in ``<state>/lib/release.json``.
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path

from streamops.exceptions import UnknownRelease
from streamops.settings import Settings
from streamops.state.layout import read_json, write_json_atomic
from streamops_contract.names import check_name

log = logging.getLogger("streamops.cluster.releases")

RELEASES_DIR = Path("jars") / "releases"


@dataclass(frozen=True)
class Switch:
    """The outcome of a switch: ``previous`` is ``None`` when no release was active."""

    active: str
    previous: str | None

    @property
    def changed(self) -> bool:
        return self.active != self.previous


class ReleaseStore:
    """The jar releases of a config directory and the active one of a state root."""

    def __init__(self, settings: Settings) -> None:
        self.root = settings.config_dir / RELEASES_DIR
        self.layout = settings.layout

    def known(self) -> list[str]:
        """Release names (directories holding at least one jar), sorted."""
        if not self.root.is_dir():
            return []
        return sorted(p.name for p in self.root.iterdir() if p.is_dir() and any(p.glob("*.jar")))

    def path(self, release: str) -> Path:
        """The directory of ``release``; ``UnknownRelease`` naming the known ones if absent."""
        known = self.known()
        if release not in known:
            hint = ", ".join(known) if known else "none (run scripts/build_jars.sh)"
            raise UnknownRelease(
                f"unknown jar release {release!r} under {self.root}; known releases: {hint}"
            )
        return self.root / check_name("release", release)

    def active(self) -> str | None:
        """The release the active symlink points at, or ``None`` if there is none."""
        link = self.layout.active_release_link
        if not link.is_symlink():
            return None
        return Path(os.readlink(link)).name

    def switch(self, release: str) -> Switch:
        """Point the active symlink at ``release`` atomically; a no-op if it already does."""
        target = self.path(release)
        previous = self.active()
        if previous == release:
            log.info("jar release %s is already active", release)
            return Switch(release, previous)
        link = self.layout.active_release_link
        link.parent.mkdir(parents=True, exist_ok=True)
        tmp = link.with_name(f".{link.name}.{os.getpid()}.tmp")
        tmp.unlink(missing_ok=True)
        tmp.symlink_to(target, target_is_directory=True)
        os.replace(tmp, link)
        write_json_atomic(self.layout.release_record,
                          {"active": release, "previous": previous, "switched_at": time.time()})
        log.info("switched the active jar release from %s to %s (%s)", previous or "none",
                 release, target)
        return Switch(release, previous)

    def record(self) -> dict[str, object]:
        """``release.json``: active, previous, switched_at (empty if never switched)."""
        return dict(read_json(self.layout.release_record) or {})
