"""Resources as files: a job deployment and a savepoint request, validated like job specs
(one error line per bad field).

A **job deployment** (``config/deployments/<name>.yaml``, kind ``JobDeployment``) says which
job should run and how: its spec (``spec_file``, relative to the resource file, or ``spec``
inline), ``state`` (running | suspended), the upgrade policy, an initial savepoint, a restart
nonce and a savepoint schedule with its history. A **savepoint request** (kind
``SavepointRequest``) asks for one savepoint of a job, with cancel or not.

Applying reads the spec once and keeps it by value (:mod:`.store`):
editing the spec file later changes nothing until it is applied again.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from streamops.exceptions import ConfigError, UnsafeNameError
from streamops.spec import JobSpec, read_yaml, validation_lines
from streamops_contract.names import check_name
from streamops_contract.textfile import read_text

_DURATION = re.compile(
    r"^\s*(\d+(?:\.\d+)?)\s*(s|sec|secs|seconds?|m|min|mins|minutes?|h|hours?|d|days?)\s*$"
)
_UNIT_S = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}

DEPLOYMENT = "JobDeployment"
SAVEPOINT_REQUEST = "SavepointRequest"
KINDS = (DEPLOYMENT, SAVEPOINT_REQUEST)


def duration_seconds(text: str) -> float:
    """``"30s"``, ``"10 minutes"``, ``"12h"``, ``"7 days"`` → seconds."""
    m = _DURATION.match(str(text))
    if not m:
        raise ValueError(f"{text!r} is not a duration like '30s', '10 minutes', '12h' or '7d'")
    return float(m.group(1)) * _UNIT_S[m.group(2)[0]]


def _errors(exc: ValidationError) -> list[str]:
    return validation_lines(exc, whole="(resource)")


def _checked(kind: str) -> AfterValidator:
    """A field holding a safe name of ``kind`` (a file name under the state root)."""

    def check(value: str) -> str:
        try:
            return check_name(kind, value)
        except UnsafeNameError as exc:
            raise ValueError(str(exc)) from exc

    return AfterValidator(check)


DeploymentName = Annotated[str, _checked("deployment")]
SavepointName = Annotated[str, _checked("savepoint")]
JobName = Annotated[str, _checked("job")]


class UpgradePolicy(BaseModel):
    """How a changed spec replaces the running version."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    mode: Literal["savepoint", "last-state", "stateless"] = Field(
        default="savepoint",
        description="savepoint: the upgrade procedure (plan, savepoint with cancel, start "
        "from it, rollback); last-state: stop and start from the stages' last checkpoints; "
        "stateless: stop and start with empty checkpoints",
    )
    standby: Literal["none", "warm", "hot"] = Field(
        default="none",
        description="none: cold upgrades; warm: the new version armed beside the old before "
        "the savepoint; hot: the job runs a hot standby (the spec's standby: hot)",
    )
    allow_state_drop: bool = False


class SavepointSchedule(BaseModel):
    """Periodic savepoints of a running job and how long they are kept."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    interval: str | None = None
    cron: str | None = None
    max_age: str | None = None
    max_count: int | None = Field(default=None, ge=1)

    @field_validator("interval", "max_age")
    @classmethod
    def _duration(cls, v: str | None) -> str | None:
        if v is not None and duration_seconds(v) <= 0:
            raise ValueError("must be greater than zero")
        return v

    @field_validator("cron")
    @classmethod
    def _cron(cls, v: str | None) -> str | None:
        if v is None:
            return v
        from croniter import croniter

        if not croniter.is_valid(v):
            raise ValueError(f"{v!r} is not a cron expression like '*/10 * * * *'")
        return v

    @model_validator(mode="after")
    def _one_trigger(self) -> SavepointSchedule:
        if self.interval and self.cron:
            raise ValueError("give interval or cron, not both")
        return self

    @property
    def interval_s(self) -> float | None:
        return duration_seconds(self.interval) if self.interval else None

    @property
    def max_age_s(self) -> float | None:
        return duration_seconds(self.max_age) if self.max_age else None

    @property
    def periodic(self) -> bool:
        return bool(self.interval or self.cron)


class Deployment(BaseModel):
    """A job deployment as applied: the spec by value."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["JobDeployment"] = DEPLOYMENT
    name: DeploymentName
    spec: JobSpec
    state: Literal["running", "suspended"] = "running"
    upgrade: UpgradePolicy = Field(default_factory=UpgradePolicy)
    initial_savepoint: SavepointName | None = None
    restart_nonce: int = 0
    savepoints: SavepointSchedule = Field(default_factory=SavepointSchedule)

    @model_validator(mode="after")
    def _same_name(self) -> Deployment:
        if self.spec.name != self.name:
            raise ValueError(f"the spec's name {self.spec.name!r} is not the deployment's "
                             f"{self.name!r}: a deployment runs the job of its own "
                             "name")  # fmt: skip
        return self

    @property
    def effective_spec(self) -> JobSpec:
        """The spec as submitted: with ``upgrade.standby: hot`` the job runs a hot standby."""
        if self.upgrade.standby == "hot" and self.spec.standby != "hot":
            return self.spec.model_copy(update={"standby": "hot"})
        return self.spec

    @property
    def upgrade_standby(self) -> str:
        """The upgrade procedure's standby mode."""
        return "warm" if self.upgrade.standby == "warm" else "cold"

    def digest(self) -> str:
        return digest(self.model_dump(mode="json"))


class SavepointRequest(BaseModel):
    """One savepoint of a job, with cancel or not; ``name`` is the savepoint's too."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["SavepointRequest"] = SAVEPOINT_REQUEST
    name: SavepointName
    job: JobName
    cancel: bool = False

    def digest(self) -> str:
        return digest(self.model_dump(mode="json"))


Resource = Deployment | SavepointRequest


def digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()[:16]


def spec_digest(spec: JobSpec) -> str:
    return digest(spec.model_dump(mode="json"))


def _deployment(data: dict[str, Any], base: Path | None, source: str) -> Deployment:
    data, lines = dict(data), []
    spec_file, inline = data.pop("spec_file", None), data.get("spec")
    if spec_file is not None and inline is not None:
        lines.append("  spec: give spec or spec_file, not both")
    elif spec_file is not None:
        path = Path(str(spec_file))
        path = path if path.is_absolute() or base is None else base / path
        try:
            data["spec"] = read_yaml(path)
        except ConfigError as exc:
            lines.append(f"  spec_file: {exc}")
            data.pop("spec", None)
    elif inline is None:
        lines.append("  spec: missing: give spec (inline) or spec_file")
    if lines:  # validate the rest too, so that every bad field is named at once
        try:
            placeholder = {**_PLACEHOLDER_SPEC, "name": data.get("name")}
            Deployment.model_validate({**data, "spec": placeholder})
        except ValidationError as exc:
            lines += [x for x in _errors(exc) if not x.startswith(("  (resource)", "  spec"))]
        raise ConfigError(f"{source}: invalid {DEPLOYMENT}\n" + "\n".join(lines))
    try:
        return Deployment.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"{source}: invalid {DEPLOYMENT}\n" + "\n".join(_errors(exc))) from exc


_PLACEHOLDER_SPEC: dict[str, Any] = {"version": "0", "entrypoint": "x"}


def resource_from_dict(data: Any, source: str = "<resource>", base: Path | None = None) -> Resource:
    """A validated resource of ``data``; ``base``: the directory a ``spec_file`` is relative to."""
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: a resource must be a mapping of fields, got "
                          f"{type(data).__name__}")  # fmt: skip
    kind = data.get("kind")
    if kind == DEPLOYMENT:
        return _deployment(data, base, source)
    if kind == SAVEPOINT_REQUEST:
        try:
            return SavepointRequest.model_validate(data)
        except ValidationError as exc:
            raise ConfigError(f"{source}: invalid {SAVEPOINT_REQUEST}\n"
                              + "\n".join(_errors(exc))) from exc  # fmt: skip
    raise ConfigError(f"{source}: invalid resource\n  kind: {kind!r} is not one of "
                      f"{', '.join(KINDS)}")  # fmt: skip


def load_resources(path: str | Path) -> list[Resource]:
    """Every resource of a YAML file (several documents separated by ``---`` allowed)."""
    p = Path(path)
    text = read_text(p)
    try:
        docs = [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError as exc:
        raise ConfigError(f"{p}: not valid YAML: {exc}") from exc
    if not docs:
        raise ConfigError(f"{p}: no resource in the file")
    where = [f"{p}" if len(docs) == 1 else f"{p} (document {i + 1})" for i in range(len(docs))]
    return [resource_from_dict(d, w, base=p.parent) for d, w in zip(docs, where, strict=True)]
