"""A job's JSON-lines records, as both sides write them and the operator reads them.

``jobs/<job>/submissions.jsonl``: one :class:`SubmissionRecord` per driver submitted (by the
operator, or by a hot driver for its standby) and one :class:`Cancellation` per driver the
operator killed; the registry finds a job's drivers there. ``jobs/<job>/drivers.jsonl``: one
:class:`DriverStart` per driver start, relaunches included (a relaunched driver has an id no
submission names; ``streamops cancel`` and the orphan check find it here). Each line is one
``write`` (:func:`~streamops_contract.state.layout.append_jsonl`), so lines never interleave;
:func:`read_jsonl` skips a line torn by a crash.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from streamops_contract.state.layout import append_jsonl


@dataclass(frozen=True)
class SubmissionRecord:
    """A driver submitted: its id, the spec it runs (as JSON), whether it is a warm standby
    (with the ``token`` of its go file) or a hot standby."""

    driver_id: str
    version: str
    spec: dict[str, Any]
    standby: bool = False
    hot_standby: bool = False
    token: str | None = None
    at: float = field(default_factory=time.time)
    event: Literal["submitted"] = "submitted"

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        if self.token is None:
            del data["token"]
        return data


@dataclass(frozen=True)
class Cancellation:
    """A driver the operator killed (no relaunch)."""

    driver_id: str
    at: float = field(default_factory=time.time)
    event: Literal["cancelled"] = "cancelled"

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class DriverStart:
    """A driver started (``main.py``, before its Spark session): its id, its pid, its role."""

    driver_id: str
    pid: int
    hot_standby: bool = False
    standby: str | None = None
    at: float = field(default_factory=time.time)
    event: Literal["started"] = "started"

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def append_record(path: Path, record: SubmissionRecord | Cancellation | DriverStart) -> None:
    """Append ``record`` to the JSON-lines file ``path``."""
    append_jsonl(path, record.to_json())


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """The JSON lines of ``path`` (none if absent; a torn last line skipped)."""
    if not path.is_file():
        return []
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return out
