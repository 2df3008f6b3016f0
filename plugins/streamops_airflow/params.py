"""Checks of DAG parameters, run by the first task of each DAG.

Airflow's ``Param`` JSON schema catches types and ranges in the trigger form; these checks need
the cluster's state (does the job exist, the savepoint, the release) and raise
:class:`ParamError` naming the parameter, so a bad run fails in its first task, before any
destructive step.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from streamops.exceptions import StreamopsError
from streamops.settings import PROJECT_ROOT, Settings
from streamops.spec import JobSpec, load_spec
from streamops.state.savepoints import catalogue
from streamops_airflow.exceptions import ParamError, ProcedureFailed
from streamops_contract.names import check_name


def require(params: Mapping[str, Any], name: str) -> Any:
    value = params.get(name)
    if value is None or value == "":
        raise ParamError(name, "is required")
    return value


def safe_name(params: Mapping[str, Any], name: str) -> str:
    value = str(require(params, name))
    try:
        check_name(name, value)
    except StreamopsError as exc:
        raise ParamError(name, str(exc)) from exc
    return value


def known_job(params: Mapping[str, Any], name: str, settings: Settings) -> str:
    """A job this cluster knows (it was submitted at least once)."""
    job = safe_name(params, name)
    known = settings.layout.known_jobs()
    if job not in known:
        raise ParamError(name, f"unknown job '{job}' (known: {', '.join(known) or 'none'})")
    return job


def existing_savepoint(
    params: Mapping[str, Any], name: str, settings: Settings, job: str | None = None
) -> str:
    value = safe_name(params, name)
    try:
        catalogue.get_savepoint(settings.layout, value, job=job)
    except StreamopsError as exc:
        raise ParamError(name, str(exc)) from exc
    return value


def one_of(
    params: Mapping[str, Any], name: str, choices: Sequence[str], default: str | None = None
) -> str:
    """One of ``choices`` (``default`` when the param is absent or empty)."""
    value = params.get(name)
    if (value is None or value == "") and default is not None:
        return default
    if value not in choices:
        raise ParamError(name, f"{value!r} is not one of {', '.join(choices)}")
    return str(value)


def positive_int(params: Mapping[str, Any], name: str, minimum: int = 1) -> int:
    value = require(params, name)
    try:
        number = int(value)
    except (TypeError, ValueError) as exc:
        raise ParamError(name, f"must be an integer, got {value!r}") from exc
    if number < minimum:
        raise ParamError(name, f"must be at least {minimum}, got {number}")
    return number


def known_release(params: Mapping[str, Any], name: str, settings: Settings) -> str:
    """A classpath jar release that exists under ``<config>/jars/releases``."""
    from streamops.cluster.releases import ReleaseStore

    release = safe_name(params, name)
    try:
        ReleaseStore(settings).path(release)
    except StreamopsError as exc:
        raise ParamError(name, str(exc)) from exc
    return release


def job_spec(params: Mapping[str, Any], name: str, settings: Settings) -> tuple[Path, JobSpec]:
    """A readable, valid job spec: an absolute path, or relative to ``config/jobs/``."""
    raw = str(require(params, name))
    path = Path(raw).expanduser()
    candidates = [path] if path.is_absolute() else [
        settings.config_dir / "jobs" / path, settings.config_dir / path, PROJECT_ROOT / path,
    ]  # fmt: skip
    found = next((p for p in candidates if p.is_file()), None)
    if found is None:
        raise ParamError(name, f"no job spec file {raw!r} (looked at "
                               f"{', '.join(str(c) for c in candidates)})")  # fmt: skip
    try:
        return found, load_spec(found)
    except StreamopsError as exc:
        raise ParamError(name, str(exc)) from exc


def new_savepoint_name(params: Mapping[str, Any], name: str, settings: Settings) -> str | None:
    """An optional savepoint name to create: safe, and not taken."""
    if not params.get(name):
        return None
    value = safe_name(params, name)
    if settings.layout.savepoint(value).exists():
        raise ParamError(name, f"savepoint {value} exists already; pick another name")
    return value


def admitted(params: Mapping[str, Any], settings: Settings, what: str, **change: Any) -> None:
    """Admission (N+1, :func:`streamops.admission.admit`) for the DAG's change, under its
    ``allow_no_spare`` param: a shortfall fails the first task, nothing changed, naming it."""
    from streamops.admission import admit
    from streamops.exceptions import CapacityShortfall

    try:
        admit(settings, what, allow_no_spare=bool(params.get("allow_no_spare")), **change)
    except CapacityShortfall as exc:
        raise ProcedureFailed(str(exc).replace("pass --allow-no-spare",
                                               "trigger with allow_no_spare")) from exc
