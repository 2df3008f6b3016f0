"""Which job each driver of the master belongs to, from the master's FILESYSTEM recovery files.

The master's ``/json/`` lists a driver's id, state, worker and main class (PythonRunner for
every job), never its application's name; a driver it relaunched after a node loss gets a new
id that no submission names, and while it waits for cores (``SUBMITTED``) it has run nothing
that could say whose it is. The master keeps one file per driver it has not finished in its
recovery directory (``driver_<id>``, written when the driver is created or relaunched,
removed when it ends): the driver's description, Java-serialized, whose options hold
``-Dspark.app.name=<job>`` (every submission names its application after its job). A Java
serialized string is its length on two bytes, then its bytes: read that way, the name ends
where it ends.
"""

from __future__ import annotations

import logging
from pathlib import Path

log = logging.getLogger("streamops.cluster.recovery")

APP_NAME_OPTION = b"-Dspark.app.name="
DRIVER_PREFIX = "driver_"


def app_name(blob: bytes) -> str | None:
    """The ``spark.app.name`` of a serialized driver description, or ``None``."""
    at = blob.find(APP_NAME_OPTION)
    while at >= 2:
        length = int.from_bytes(blob[at - 2 : at], "big")
        end = at + length
        if length > len(APP_NAME_OPTION) and end <= len(blob):
            return blob[at + len(APP_NAME_OPTION) : end].decode("utf-8", errors="replace")
        at = blob.find(APP_NAME_OPTION, at + 1)
    return None


def driver_app_names(recovery_dir: Path) -> dict[str, str]:
    """Driver id → application (job) name of every driver the master has persisted; empty
    when the directory is absent or unreadable (a master elsewhere, or not started here)."""
    found: dict[str, str] = {}
    try:
        paths = sorted(recovery_dir.glob(f"{DRIVER_PREFIX}*"))
    except OSError:
        return found
    for path in paths:
        try:
            name = app_name(path.read_bytes())
        except OSError:  # removed meanwhile (the driver ended), or not ours to read
            continue
        if name:
            found[path.name[len(DRIVER_PREFIX) :]] = name
    return found


def driver_persisted(recovery_dir: Path, driver_id: str) -> bool | None:
    """Whether the master keeps ``driver_id`` (its ``driver_<id>`` file); ``None`` when the
    directory cannot be read (no master persists here). A driver the master relaunched on
    another worker (its worker declared dead) or ended has no file any more."""
    try:
        if not recovery_dir.is_dir():
            return None
        return (recovery_dir / f"{DRIVER_PREFIX}{driver_id}").exists()
    except OSError:
        return None
