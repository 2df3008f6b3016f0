"""The control protocol between the ops side and a running job's driver.

The ops side writes a request file atomically (``jobs/<job>/control/<id>.json``); the
driver acts at the next batch boundary and writes ``<id>.result.json``. Every request has a
timeout: the driver refuses an expired request, and the waiting side gives up with a
message that says what the job was doing. Requests: ``savepoint {name, cancel}``, ``stop``.
"""

from __future__ import annotations

import logging
import os
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from streamops_contract.exceptions import JobError
from streamops_contract.names import check_name
from streamops_contract.state.layout import StateLayout, read_json, write_json_atomic

log = logging.getLogger("streamops.state.control")

RequestKind = Literal["savepoint", "stop"]


class ControlTimeout(JobError):
    """The driver did not answer a control request in time."""


class ControlFailed(JobError):
    """The driver answered a control request with a failure."""


class DriverGone(ControlFailed):
    """The driver ended (or could no longer be seen) before it answered."""


class Withdrawn(ControlFailed):
    """The sender withdrew the request before the driver could publish its outcome."""


CLAIM_GRACE_S = 10.0
"""How long a sender waits for the answer of a driver that claimed its request (it was
publishing its outcome) and then went away."""


@dataclass(frozen=True)
class ControlRequest:
    id: str
    kind: RequestKind
    created_at: float
    timeout_s: float
    name: str | None = None
    cancel: bool = False
    # with cancel: a warm standby takes over; the stopped driver shuts down only once the new
    # version runs (or HANDOVER_WAIT_S passed), so its teardown does not slow the new
    # version's first batches
    handover: bool = False

    @property
    def expired(self) -> bool:
        return time.time() > self.created_at + self.timeout_s

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ControlRequest:
        return cls(**{k: data[k] for k in cls.__dataclass_fields__ if k in data})


@dataclass(frozen=True)
class ControlResult:
    id: str
    ok: bool
    message: str
    finished_at: float
    detail: dict[str, Any] = field(default_factory=dict)


def _request_path(layout: StateLayout, job: str, request_id: str) -> Any:
    return layout.control_dir(job) / f"{request_id}.json"


def _result_path(layout: StateLayout, job: str, request_id: str) -> Any:
    return layout.control_dir(job) / f"{request_id}.result.json"


def send_request(
    layout: StateLayout,
    job: str,
    kind: RequestKind,
    *,
    name: str | None = None,
    cancel: bool = False,
    handover: bool = False,
    timeout: float = 120.0,
    request_id: str | None = None,
) -> ControlRequest:
    """Write a request for the driver of ``job``; it is acted on at the next batch boundary.

    ``request_id`` (from :func:`new_request_id`): an id recorded before the request is sent,
    so that a sender that died in between sends that request, never a second one."""
    if kind == "savepoint":
        check_name("savepoint", name)
    request = ControlRequest(
        id=request_id or new_request_id(kind), kind=kind, created_at=time.time(),
        timeout_s=timeout, name=name, cancel=cancel, handover=handover and cancel,
    )  # fmt: skip
    write_json_atomic(_request_path(layout, job, request.id), asdict(request))
    log.info("sent %s request %s to job %s (timeout %.0fs)", kind, request.id, job, timeout)
    return request


def new_request_id(kind: RequestKind) -> str:
    """A fresh request id (sortable by time: the driver handles requests oldest first)."""
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    return f"{stamp}-{kind}-{uuid.uuid4().hex[:8]}"


def wait_result(
    layout: StateLayout,
    job: str,
    request: ControlRequest,
    *,
    still_alive: Callable[[], bool] | None = None,
    poll: float = 0.05,
    alive_every: float = 1.0,
) -> ControlResult:
    """Wait for the driver's answer; raise on failure, timeout, or a driver that went away.

    The answer file is looked for every ``poll`` seconds, ``still_alive`` (which may ask the
    master) asked every ``alive_every`` seconds."""
    deadline = time.monotonic() + request.timeout_s + 10.0
    next_log = time.monotonic() + 10.0
    next_alive = time.monotonic() + alive_every
    while True:
        data = read_json(_result_path(layout, job, request.id))
        if data is not None:
            result = ControlResult(**data)
            if not result.ok:
                raise ControlFailed(
                    f"job {job}: {request.kind} {request.id} failed: {result.message}"
                )
            return result
        if still_alive is not None and time.monotonic() >= next_alive:
            next_alive = time.monotonic() + alive_every
            if not still_alive():
                raise DriverGone(
                    f"job {job}: the driver went away before answering {request.kind} "
                    f"{request.id}"
                )
        if time.monotonic() > deadline:
            raise ControlTimeout(
                f"job {job}: no answer to {request.kind} {request.id} within "
                f"{request.timeout_s:.0f}s; is the job running and committing batches?"
            )
        if time.monotonic() > next_log:
            log.info("waiting for job %s to answer %s %s", job, request.kind, request.id)
            next_log = time.monotonic() + 10.0
        time.sleep(poll)


def claim(layout: StateLayout, job: str, request: ControlRequest, by: str) -> bool:
    """Take ``request``'s one decision: the driver's, to publish its outcome (a savepoint's
    rename), or the sender's, to withdraw it. Whoever creates ``<id>.claim`` first has it
    (an exclusive create); the other learns so here (False) and must not act on it."""
    path = layout.control_dir(job) / f"{request.id}.claim"
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    except FileExistsError:
        return False
    with os.fdopen(fd, "w") as out:
        out.write(by)
    return True


def claim_age(layout: StateLayout, job: str, request_id: str) -> float | None:
    """Seconds since ``request_id`` was claimed (None: not claimed)."""
    try:
        return time.time() - (layout.control_dir(job) / f"{request_id}.claim").stat().st_mtime
    except FileNotFoundError:
        return None


def withdraw(layout: StateLayout, job: str, request: ControlRequest, reason: str) -> bool:
    """Answer ``request`` for its driver when the sender gives up on it (the driver went away,
    no answer in time), so that no later driver of the job acts on it: True. False when it
    was answered already, or its driver claimed it first (it was publishing its outcome as
    it went away: its answer follows, :func:`await_claimed`)."""
    if read_result(layout, job, request.id) is not None:
        return False
    if not claim(layout, job, request, f"sender: {reason}"):
        return False
    write_result(layout, job, request, ok=False, message=f"withdrawn by its sender: {reason}")
    return True


def await_claimed(
    layout: StateLayout, job: str, request: ControlRequest, grace: float = CLAIM_GRACE_S,
    poll: float = 0.1,
) -> ControlResult | None:  # fmt: skip
    """The answer of a request its driver claimed, once written; None when none came within
    ``grace`` of the claim (the driver died between its claim and its answer)."""
    while True:
        result = read_result(layout, job, request.id)
        if result is not None:
            return result
        age = claim_age(layout, job, request.id)
        if age is None or age > grace:
            return None
        time.sleep(poll)


def read_request(layout: StateLayout, job: str, request_id: str) -> ControlRequest | None:
    """A request sent to the driver of ``job`` (answered or not), or ``None``."""
    data = read_json(_request_path(layout, job, request_id))
    return ControlRequest.from_json(data) if data is not None else None


def read_result(layout: StateLayout, job: str, request_id: str) -> ControlResult | None:
    """The driver's answer to a request, or ``None`` while it has not answered."""
    data = read_json(_result_path(layout, job, request_id))
    return ControlResult(**data) if data is not None else None


# --- driver side ----------------------------------------------------------------------
def pending_requests(layout: StateLayout, job: str) -> list[ControlRequest]:
    """Requests without a result, oldest first."""
    folder = layout.control_dir(job)
    if not folder.is_dir():
        return []
    out = []
    for path in sorted(folder.glob("*.json")):
        if path.name.endswith(".result.json") or path.name.startswith("."):
            continue
        if _result_path(layout, job, path.stem).exists():
            continue
        data = read_json(path)
        if data:
            out.append(ControlRequest.from_json(data))
    return sorted(out, key=lambda r: r.created_at)


def write_result(
    layout: StateLayout,
    job: str,
    request: ControlRequest,
    *,
    ok: bool,
    message: str,
    detail: dict[str, Any] | None = None,
) -> ControlResult:
    result = ControlResult(request.id, ok, message, time.time(), detail or {})
    write_json_atomic(_result_path(layout, job, request.id), asdict(result))
    return result
