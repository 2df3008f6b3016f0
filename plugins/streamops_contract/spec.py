"""Job specs: ``config/jobs/<job>.yaml``, validated with one clear error per bad field."""

from __future__ import annotations

import base64
import binascii
import json
import re
from enum import StrEnum
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    ValidationError,
    field_validator,
    model_serializer,
)

from streamops_contract.exceptions import ConfigError, UnsafeNameError
from streamops_contract.names import check_name
from streamops_contract.textfile import read_text

_DURATION = re.compile(
    r"^\s*(\d+(?:\.\d+)?)\s*(ms|millis|milliseconds?|s|sec|seconds?|m|min|minutes?)\s*$"
)
_MEMORY = re.compile(r"^\d+[kmgt]?$", re.IGNORECASE)
_MODULE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")


class ProcessingGuarantee(StrEnum):
    EXACTLY_ONCE = "exactly_once"
    AT_LEAST_ONCE = "at_least_once"
    NONE = "none"


def parse_duration(text: str) -> float:
    """``"2 seconds"``, ``"500ms"``, ``"1 min"`` → seconds as a float."""
    m = _DURATION.match(str(text))
    if not m:
        raise ValueError(f"{text!r} is not a duration like '2 seconds', '500 ms' or '1 minute'")
    value, unit = float(m.group(1)), m.group(2)
    if unit.startswith("m") and unit not in ("m", "min", "minute", "minutes"):
        return value / 1000.0
    if unit in ("m", "min", "minute", "minutes"):
        return value * 60.0
    return value


class Resources(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    driver_cores: int = Field(default=1, ge=1, le=64)
    driver_memory: str = "1g"
    executor_cores: int = Field(default=1, ge=1, le=64)
    executor_memory: str = "1g"
    max_cores: int = Field(default=2, ge=1, le=1024, description="spark.cores.max")

    @field_validator("driver_memory", "executor_memory")
    @classmethod
    def _memory(cls, v: str) -> str:
        if not _MEMORY.match(v):
            raise ValueError(f"{v!r} is not a memory size like '512m' or '1g'")
        return v.lower()


class LatencySlo(BaseModel):
    """A job's end-to-end latency objective, which times the changes that stop it
    (``upgrade``, ``restart``, ``cluster restart``: :mod:`streamops.procedures.catch_up`):
    the latency may stay above ``objective`` for at most ``allowed_breach``; a change whose
    predicted catch-up breaks that waits up to ``max_wait`` for the backlog to shrink, then
    is refused."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    objective: str = Field(description="the latency aimed at, e.g. '10 seconds'")
    allowed_breach: str = Field(description="how long it may stay above, e.g. '60 seconds'")
    max_wait: str = Field(default="5 minutes", description="how long a change waits for "
                          "the backlog to shrink before it is refused ('0 s': refuse at once)")

    @field_validator("objective", "allowed_breach", "max_wait")
    @classmethod
    def _duration(cls, v: str) -> str:
        if parse_duration(v) < 0:
            raise ValueError("must not be negative")
        return v

    @property
    def objective_s(self) -> float:
        return parse_duration(self.objective)

    @property
    def allowed_breach_s(self) -> float:
        return parse_duration(self.allowed_breach)

    @property
    def max_wait_s(self) -> float:
        return parse_duration(self.max_wait)


class JobSpec(BaseModel):
    """What to run: one streaming job, identified by its name."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    version: str = Field(min_length=1, max_length=64)
    entrypoint: str = Field(description="module with a build(ctx) function, e.g. spark_jobs.x")
    code: str | None = Field(
        default=None,
        description="a folder holding the job's own code, outside this project: the "
        "entrypoint is imported from it. Relative to the spec file; shipped to the cluster "
        "as a zip under the state root, named by the hash of its content",
    )
    description: str = ""
    args: dict[str, str | int | float | bool] = Field(default_factory=dict)
    processing_guarantee: ProcessingGuarantee = ProcessingGuarantee.EXACTLY_ONCE
    trigger_interval: str = "2 seconds"
    resources: Resources = Field(default_factory=Resources)
    classpath_jars: list[str] = Field(default_factory=list)
    conf: dict[str, str] = Field(default_factory=dict, description="extra Spark properties")
    on_source_reset: Literal["fail", "restart_from_earliest"] = Field(
        default="fail",
        description="what a stage does when a source was reset, replaced or lost records it "
        "had not read: fail naming the positions (default), or read the source from its "
        "earliest record and count the loss in the job's status",
    )
    standby: Literal["none", "hot"] = Field(
        default="none",
        description="hot: a second driver of the same version is kept armed beside the "
        "running one (stages built and started, held at a gate, executors warm) and takes the "
        "job over within seconds when the running driver dies; it costs a driver's and its "
        "executors' cores",
    )
    latency_slo: LatencySlo | None = Field(
        default=None,
        description="the latency objective that times the changes stopping the job; none: "
        "they go at once (see LatencySlo)",
    )

    @model_serializer(mode="wrap")
    def _without_unset_slo(
        self, handler: SerializerFunctionWrapHandler, info: SerializationInfo
    ) -> Any:
        """A spec without ``latency_slo`` dumps as before the field existed (the describe
        cache's keys, the intents' specs by value, the driver's token stay the same)."""
        data = handler(self)
        if isinstance(data, dict) and data.get("latency_slo", ...) is None:
            del data["latency_slo"]
        return data

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        try:
            return check_name("job", v)
        except UnsafeNameError as exc:
            raise ValueError(str(exc)) from exc

    @field_validator("entrypoint")
    @classmethod
    def _entrypoint(cls, v: str) -> str:
        if not _MODULE.match(v):
            raise ValueError(f"{v!r} is not a dotted Python module name")
        return v

    @field_validator("trigger_interval")
    @classmethod
    def _trigger(cls, v: str) -> str:
        seconds = parse_duration(v)
        if seconds <= 0:
            raise ValueError("must be greater than zero")
        return v

    @field_validator("conf", mode="before")
    @classmethod
    def _conf(cls, v: Any) -> Any:
        if not isinstance(v, dict):
            return v
        bad = [str(k) for k in v if not str(k).startswith("spark.")]
        if bad:
            raise ValueError(f"keys must start with 'spark.': {', '.join(bad)}")
        return {str(k): str(x).lower() if isinstance(x, bool) else str(x) for k, x in v.items()}

    @property
    def trigger_seconds(self) -> float:
        return parse_duration(self.trigger_interval)

    @property
    def executor_cores(self) -> int:
        """The cores of each of the job's executors: the spec's, but one for a job with a hot
        standby. The master spreads a standby's executors over the workers, so the death of
        the running driver's node leaves it some; its one executor of two cores was on that
        node in a drill, and the takeover waited 5 s more for a new one (8.4 s instead of
        2-3 s). A job without a standby keeps its executors whole: one JVM to start on a
        relaunch."""
        return 1 if self.standby == "hot" else self.resources.executor_cores

    def resolved_args(self, **context: str) -> dict[str, str | int | float | bool]:
        """Arguments with ``{state_root}``-style placeholders filled from ``context``."""
        out: dict[str, str | int | float | bool] = {}
        for key, value in self.args.items():
            if isinstance(value, str):
                try:
                    value = value.format(**context)
                except KeyError as exc:
                    raise ConfigError(
                        f"job spec {self.name}: args.{key} uses unknown placeholder {exc}; "
                        f"known: {', '.join(sorted(context))}"
                    ) from exc
                except (IndexError, ValueError) as exc:
                    raise ConfigError(
                        f"job spec {self.name}: args.{key} has a malformed placeholder ({exc}); "
                        "placeholders look like {state_root}, literal braces are {{ and }}"
                    ) from exc
            out[key] = value
        return out


def validation_lines(exc: ValidationError, whole: str = "(spec)") -> list[str]:
    """One line per bad field of ``exc`` (``  field.path: what is wrong``), as every file the
    project validates reports them; ``whole``: the name of an error of no one field."""
    lines = []
    for err in exc.errors():
        loc = [str(p) for p in err["loc"] if not str(p).startswith("function-")]
        lines.append(f"  {'.'.join(loc) or whole}: {err['msg'].removeprefix('Value error, ')}")
    return lines


def read_yaml(path: Path, what: str = "") -> Any:
    """The YAML document of ``path``; a file that cannot be read, decoded (UTF-8) or parsed is
    a ConfigError naming it (``what``: e.g. ``"job spec "``, put before the path)."""
    text = read_text(path, what)
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from exc


def spec_from_dict(data: Any, source: str = "<spec>") -> JobSpec:
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: a job spec must be a mapping of fields, got {type(data)}")
    try:
        return JobSpec.model_validate(data)
    except ValidationError as exc:
        lines = validation_lines(exc)
        raise ConfigError(f"{source}: invalid job spec\n" + "\n".join(lines)) from exc


def load_spec(path: str | Path) -> JobSpec:
    """Load and validate a job spec YAML file; every bad field is named in the error."""
    p = Path(path)
    spec = spec_from_dict(read_yaml(p, "job spec "), source=str(p))
    if spec.code is None or spec.code.endswith(".zip"):
        return spec
    folder = (p.parent / spec.code).resolve()  # relative to the spec file
    if not folder.is_dir():
        raise ConfigError(f"{p}: code: {folder} is not a folder (the job's own code, "
                          "relative to the spec file)")  # fmt: skip
    return spec.model_copy(update={"code": str(folder)})


def encode_spec(spec: JobSpec) -> str:
    """The spec as one command-line-safe token (base64 of its JSON), for the driver's args."""
    return base64.urlsafe_b64encode(spec.model_dump_json().encode()).decode()


def decode_spec(token: str) -> JobSpec:
    try:
        data = json.loads(base64.urlsafe_b64decode(token.encode()))
    except (ValueError, binascii.Error) as exc:
        raise ConfigError(f"the submitted job spec is not valid base64 JSON: {exc}") from exc
    return spec_from_dict(data, source="submitted spec")
