"""A job's own code, outside this project: published to the state root, versioned by content.

A spec's ``code`` names a folder (its ``entrypoint`` is a module in it). At submission the
folder is zipped into ``<state>/code/<job>/<job>-<hash>.zip``, the hash (12 hex digits of
sha256) over every file's relative path and bytes, so the same code is one file, another
version another, and a driver started later (a relaunch, a restore from a savepoint) finds
the code it was submitted with. The state root is shared by every host, so a driver on any
host reads it: the driver puts the zip first on its path and ships it to its executors
(``SparkContext.addPyFile``, :mod:`spark_jobs.main`). The zip's name is the code version that
the job's status shows.
"""

from __future__ import annotations

import hashlib
import os
import zipfile
from collections.abc import Iterator
from pathlib import Path

from streamops.exceptions import ConfigError
from streamops.spec import JobSpec
from streamops.state.layout import StateLayout

_SKIPPED = ("__pycache__", ".pytest_cache")


def code_files(folder: Path) -> Iterator[Path]:
    """The files of ``folder`` that make the job's code, in a stable order (compiled
    bytecode and hidden files left out)."""
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder)
        if not path.is_file() or any(p in _SKIPPED or p.startswith(".") for p in rel.parts):
            continue
        if path.suffix == ".pyc":
            continue
        yield path


def digest(folder: Path) -> str:
    """12 hex digits of sha256 over the relative path and bytes of every code file."""
    h = hashlib.sha256()
    for path in code_files(folder):
        h.update(str(path.relative_to(folder)).encode() + b"\0")
        h.update(path.read_bytes() + b"\0")
    return h.hexdigest()[:12]


def version(spec: JobSpec) -> str | None:
    """The code version of a published spec (its zip's hash), None without ``code``."""
    if spec.code is None:
        return None
    name = Path(spec.code).stem
    return name.rsplit("-", 1)[-1] if spec.code.endswith(".zip") else None


def publish(spec: JobSpec, layout: StateLayout) -> JobSpec:
    """``spec`` with ``code`` pointing at its zip under the state root, written if this
    version is not there yet (aside, then renamed: a reader never sees half a zip). A spec
    without ``code``, or already published, is returned as it is."""
    if spec.code is None or spec.code.endswith(".zip"):
        return spec
    folder = Path(spec.code)
    if not folder.is_dir():
        raise ConfigError(f"job {spec.name}: code folder {folder} is missing")
    target = layout.code_zip(spec.name, digest(folder))
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(f".{target.name}.{os.getpid()}.partial")
        with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as zf:
            for path in code_files(folder):
                zf.write(path, str(path.relative_to(folder)))
        os.replace(partial, target)
    return spec.model_copy(update={"code": str(target)})
