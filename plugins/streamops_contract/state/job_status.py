"""The job status document, ``jobs/<job>/status.json``, as types its writer and readers share.

The driver writes it (``spark_jobs.runtime.status.StatusBoard``) at its start, after every
batch of every stage and on each change of state. The ops side reads it (the job registry,
health, the dashboard, the procedures) and so do the job's other drivers (a hot standby, a
successor waiting for its turn).

During a rolling upgrade a process of another version may read what this one wrote, so the
JSON keeps its key names and shapes: a key is written once it was set, as the plain dict this
replaces wrote it, and keys this version does not declare are kept as they were read.

Reading is tolerant (:meth:`JobStatus.parse`, :func:`load_status`): a missing key is None or
empty, an unknown key is kept, a value of the wrong type falls back to its default instead
of failing the whole document, and an absent or unreadable file is no status. Writing is
strict: :meth:`update` refuses a name the document does not declare, and every value set is
checked against its field's type.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any, Literal, Self

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    ValidationError,
    ValidationInfo,
    ValidatorFunctionWrapHandler,
    field_validator,
)

from streamops_contract.state.layout import StateLayout

log = logging.getLogger("streamops.state.job_status")

_TOLERANT = {"tolerant": True}
"""The validation context of a reader: a value of the wrong type becomes its default."""


class _Part(BaseModel):
    """What every part of the document shares: unknown keys kept, assignments checked, the
    tolerant reading, and the JSON of the keys set."""

    model_config = ConfigDict(extra="allow", validate_assignment=True, coerce_numbers_to_str=True)

    @field_validator("*", mode="wrap")
    @classmethod
    def _tolerate(
        cls, value: Any, handler: ValidatorFunctionWrapHandler, info: ValidationInfo
    ) -> Any:
        try:
            return handler(value)
        except ValidationError:
            if not (info.context or {}).get("tolerant") or info.field_name is None:
                raise
            log.debug("status: %s=%r is not of its type; read as unset", info.field_name, value)
            return cls.model_fields[info.field_name].get_default(call_default_factory=True)

    @classmethod
    def parse(cls, doc: Any) -> Self:
        """The part as ``doc`` (parsed JSON) holds it; empty if ``doc`` is no JSON object."""
        if not isinstance(doc, dict):
            return cls()
        try:
            return cls.model_validate(doc, context=_TOLERANT)
        except ValidationError:  # every field falls back on its own; this is a last resort
            log.warning("status: cannot read %s from %.200r", cls.__name__, doc, exc_info=True)
            return cls()

    def update(self, **fields: Any) -> None:
        """Set fields, each checked against its type, all or none; a name the document does
        not declare raises ``TypeError`` (a writer must not invent keys its readers do not
        know), a value of the wrong type pydantic's ``ValidationError``."""
        unknown = sorted(set(fields) - set(type(self).model_fields))
        if unknown:
            raise TypeError(f"{type(self).__name__} declares no field {', '.join(unknown)}")
        trial = self.model_copy()
        for name, value in fields.items():
            setattr(trial, name, value)  # checked here, where a refusal changes nothing
        for name in fields:
            setattr(self, name, getattr(trial, name))

    def to_json(self) -> dict[str, Any]:
        """The JSON object of the keys set (read or written), unknown ones included."""
        return self.model_dump(mode="json", exclude_unset=True)


def _objects_only(value: Any, info: ValidationInfo) -> Any:
    """A reader's entries of a map or list of parts: those that are no JSON object dropped,
    so that one odd entry does not cost the others."""
    if not (info.context or {}).get("tolerant"):
        return value
    if isinstance(value, dict):
        return {k: v for k, v in value.items() if isinstance(v, dict)}
    if isinstance(value, list):
        return [v for v in value if isinstance(v, dict)]
    return value


class SourceProgress(_Part):
    """One source of a stage's last batch; offsets as Spark reports them (JSON of the
    source's own shape, or its text), or the end offsets of a checkpoint's last batch."""

    description: str | None = None
    start_offset: JsonValue = None
    end_offset: JsonValue = None
    latest_offset: JsonValue = None


class LastFailure(_Part):
    """The last batch of a stage that failed: when, and the error (cut to 500 characters)."""

    at: float | None = None
    error: str | None = None


class StageStatus(_Part):
    """One stage of the job: what the driver declared, its last batch, whether it is ready."""

    # declared when the driver starts its stages
    stateful: bool | None = None
    descriptor: dict[str, Any] | None = None  # operators, keys, aggregates (plans, manifests)
    resumed_batch: int | None = None  # the checkpoint's last committed batch, if any
    # the last batch (``spark_jobs.runtime.status.summarize`` of Spark's progress)
    batch_id: int | None = None
    last_batch_at: float | None = None  # when the driver recorded it (epoch seconds)
    batch_timestamp: str | None = None  # when Spark started it (ISO 8601)
    num_input_rows: int | None = None
    input_rows_per_second: float | None = None
    processed_rows_per_second: float | None = None
    batch_duration_ms: int | None = None
    durations_ms: dict[str, int] = Field(default_factory=dict)
    watermark: str | None = None
    state_rows: int = 0
    sources: list[SourceProgress] = Field(default_factory=list)
    late_rows: int = 0  # rows dropped by the watermark since the driver started
    behind_batches: int = 0  # the last batches in a row that processed slower than rows came
    # ready: committed a batch, or found no new data (idle since then)
    ready: bool = False
    idle_since: float | None = None
    failed_batches: int = 0  # since the driver started
    last_failure: LastFailure | None = None

    _sources = field_validator("sources", mode="before")(_objects_only)


StageRate = Literal["input_rows_per_second", "processed_rows_per_second"]


class JobStatus(_Part):
    """The whole document: the job's state, who runs it, how it ended, and its stages."""

    job: str | None = None
    state: str | None = None  # STARTING, RUNNING, STOPPED, FAILED
    started_at: float | None = None
    updated_at: float | None = None
    stages: dict[str, StageStatus] = Field(default_factory=dict)
    # per source id, what its readers report (``spark_jobs.sources.source_state``)
    sources_state: dict[str, dict[str, Any]] = Field(default_factory=dict)
    # who runs the job (``spark_jobs.runtime.context``; a hot standby's takeover)
    version: str | None = None
    code: str | None = None  # a job's own code: the zip it runs (``streamops.job_code``)
    driver_id: str | None = None
    app_id: str | None = None
    host: str | None = None
    pid: int | None = None
    from_savepoint: str | None = None
    processing_guarantee: str | None = None
    trigger_interval: str | None = None
    took_over_from: str | None = None
    classpath_release: str | None = None
    # how it ended: FAILED with its error, or STOPPED by a control request (a savepoint)
    error: str | None = None
    stopped_at: float | None = None
    stopped_by: str | None = None
    savepoint: str | None = None

    _entries = field_validator("stages", "sources_state", mode="before")(_objects_only)

    @classmethod
    def load(cls, path: Path) -> JobStatus | None:
        """The status at ``path``; None if the file is absent, or is not a JSON object (a
        torn or foreign file, logged)."""
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except ValueError as exc:
            log.warning("status: cannot read %s (%s); taken as no status", path, exc)
            return None
        if not isinstance(doc, dict):
            log.warning("status: %s holds no JSON object; taken as no status", path)
            return None
        return cls.parse(doc)

    def last_batch_at(self) -> float | None:
        """When the newest batch of any stage was recorded (None: none was)."""
        times = [s.last_batch_at for s in self.stages.values() if s.last_batch_at]
        return max(times) if times else None

    def rate(self, key: StageRate) -> float | None:
        """The stages' rows per second summed, to 0.1 (None: no stage reports one)."""
        values = [v for s in self.stages.values() if (v := getattr(s, key)) is not None]
        return round(sum(values), 1) if values else None

    def all_ready(self) -> bool:
        """It has stages and every one is ready (committed a batch, or is idle)."""
        return bool(self.stages) and all(s.ready for s in self.stages.values())

    def all_idle(self) -> bool:
        """Every stage found no new data at its last trigger (True without stages)."""
        return all(s.idle_since for s in self.stages.values())

    def error_of(self, driver_id: str | None) -> str | None:
        """The error recorded, if ``driver_id`` recorded it."""
        return self.error if self.error and self.driver_id == driver_id else None

    def stopped_since(self, at: float) -> bool:
        """Stopped by a control request (a savepoint with cancel) at ``at`` or later."""
        return bool(self.stopped_by) and float(self.stopped_at or 0) >= at


def read_status(layout: StateLayout, job: str) -> JobStatus:
    """The status of ``job`` (empty when it has none, or none readable)."""
    return JobStatus.load(layout.status_file(job)) or JobStatus()
