"""Stage descriptions already made, kept so that describing the same job again is instant.

Describing a version's stages starts a local Spark and builds them (tens of seconds on a small
machine). An upgrade describes the new version when it is planned (``plan-upgrade``, the
DAG's ``plan`` task) and again when the upgrade itself plans; a rolled-back or refused version
is often tried again. A description depends on the spec and on the code that builds it, so it
is kept under ``<state>/describe-cache/<key>.json``, the key a hash of the whole spec (its
version included, its mappings in sorted order) and of the size and modification time of
every Python file of the jobs' package and of the entrypoint's own module (every file of a
job's own ``code`` folder). Edit a job's code
or its spec and the key changes. The newest :data:`KEEP` descriptions are kept.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
from pathlib import Path
from typing import Any

from streamops import job_code
from streamops.settings import PROJECT_ROOT, Settings
from streamops.spec import JobSpec
from streamops.state.layout import read_json, write_json_atomic

log = logging.getLogger("streamops.describe_cache")
KEEP = 20


def _code_files(spec: JobSpec) -> list[Path]:
    entrypoint = spec.entrypoint
    files = sorted((PROJECT_ROOT / "spark_jobs").rglob("*.py"))
    if spec.code and Path(spec.code).is_dir():  # a job's own code: every file of its folder
        files.extend(job_code.code_files(Path(spec.code)))
    try:
        found = importlib.util.find_spec(entrypoint)
    except (ImportError, ValueError):
        found = None
    if found is not None and found.origin and found.origin.endswith(".py"):
        files.append(Path(found.origin))
    return files


def key(spec: JobSpec) -> str:
    """The cache key of ``spec``'s description (see the module's docstring)."""
    # the spec's fields in a canonical order: a spec that went through a store that reorders
    # mapping keys (Airflow's XCom in PostgreSQL's JSONB, shorter keys first) is the same spec
    digest = hashlib.sha256(json.dumps(spec.model_dump(mode="json"), sort_keys=True).encode())
    for path in _code_files(spec):
        try:
            stat = path.stat()
        except OSError:
            continue
        digest.update(f"{path}:{stat.st_size}:{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:32]


def _dir(settings: Settings) -> Path:
    return settings.state_root / "describe-cache"


def get(settings: Settings, spec: JobSpec) -> dict[str, dict[str, Any]] | None:
    doc = read_json(_dir(settings) / f"{key(spec)}.json")
    stages = doc.get("stages") if isinstance(doc, dict) else None
    if isinstance(stages, dict):
        log.info("job %s v%s: stages described before (same spec, same code)", spec.name,
                 spec.version)  # fmt: skip
        return stages
    return None


def put(settings: Settings, spec: JobSpec, stages: dict[str, dict[str, Any]]) -> None:
    folder = _dir(settings)
    folder.mkdir(parents=True, exist_ok=True)
    write_json_atomic(folder / f"{key(spec)}.json", {"job": spec.name, "stages": stages})
    kept = sorted(folder.glob("*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in kept[KEEP:]:
        old.unlink(missing_ok=True)
