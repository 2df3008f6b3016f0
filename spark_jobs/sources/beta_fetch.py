"""fleetsim-beta over HTTP: its head, and a range of its records read back exactly.

The server's answers are checked as they come: a range it no longer holds (HTTP 410), a
stream other than the one asked for (``X-Stream-Id``), a gap or an empty answer where records
were promised are :class:`SourceResetError` naming the positions; a server that does not answer,
answers 5xx, or whose answer is cut short at the transport level or is not JSON, is retried for
a bounded patience, then :class:`BetaSourceError` (nothing was skipped: the batch is read again).
A ``/head`` that is an error (4xx), not JSON or not an object is a :class:`BadAnswer`: the
stream reader degrades on it like on a server that does not answer.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import requests
import urllib3

from spark_jobs.sources.source_state import SourceResetError


class BetaSourceError(RuntimeError):
    """The beta server answered garbage, or could not be reached for too long."""


class BadAnswer(BetaSourceError):
    """The server answered, but nothing usable (an error status, a body that is not JSON or not
    of its shape): asked again after a backoff, like a server that does not answer."""


TRANSIENT = (
    requests.ConnectionError,
    requests.Timeout,
    requests.exceptions.ChunkedEncodingError,  # a body cut short (urllib3's ProtocolError)
    requests.exceptions.ContentDecodingError,
    urllib3.exceptions.ProtocolError,
)
"""Faults of the way to the server, not of its data (refused, timed out, a body cut short):
retried, never a loss."""


def _base_url(url: str) -> str:
    return url.rstrip("/").removesuffix("/pings")


def _check_status(resp: requests.Response) -> None:
    """Raise on an error answer: a 5xx as a transient fault (the server is struggling), any
    other as :class:`BetaSourceError`."""
    if resp.status_code >= 500:
        raise requests.ConnectionError(f"HTTP {resp.status_code} from {resp.url}")
    if resp.status_code >= 400:
        raise BetaSourceError(f"HTTP {resp.status_code} from {resp.url}: {resp.text[:200]}")


_HEAD_NUMBERS = ("first", "last", "emitted", "capacity")


def fetch_head(url: str, timeout: float) -> dict[str, Any]:
    """The server's ``/head``; :data:`TRANSIENT` when it cannot be had, :class:`BadAnswer` when
    what it answered is not a head (an error status, not JSON, not an object of numbers)."""
    where = f"{_base_url(url)}/head"
    resp = requests.get(where, timeout=timeout)
    if resp.status_code >= 500:
        raise requests.ConnectionError(f"HTTP {resp.status_code} from {where}")
    if resp.status_code >= 400:
        raise BadAnswer(f"{where} answered HTTP {resp.status_code}: {resp.text[:200]!r}")
    try:
        head = resp.json()
    except ValueError as exc:
        raise BadAnswer(f"{where} answered a body that is not JSON ({exc})") from exc
    if not isinstance(head, dict):
        raise BadAnswer(f"{where} answered {type(head).__name__}, not an object")
    for key in _HEAD_NUMBERS:
        value = head.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise BadAnswer(f"{where} answered {key}={value!r}, not a sequence number")
    return head


def _get_retrying(
    http: requests.Session, url: str, params: dict[str, int], timeout: float, patience: float
) -> tuple[requests.Response, Any]:
    """GET with capped backoff on transient faults (no answer, 5xx, a body cut short, a 200
    whose body is not JSON), for at most ``patience`` seconds: the answer and its JSON (None
    for an answer other than 200 and 410)."""
    deadline = time.monotonic() + patience
    delay = 0.5
    while True:
        try:
            resp = http.get(url, params=params, timeout=timeout)
            if resp.status_code == 200:
                return resp, resp.json()
            if resp.status_code < 500:
                return resp, _json_or_none(resp)
            fault: str = f"HTTP {resp.status_code}"
        except TRANSIENT as exc:
            fault = f"{type(exc).__name__}: {exc}"
        except ValueError as exc:  # a whole body that is not JSON: asked again
            fault = f"a body that is not JSON ({exc})"
        if time.monotonic() + delay > deadline:
            raise BetaSourceError(
                f"fleetsim-beta at {url} unreachable for {patience:.0f}s while reading "
                f"since={params.get('since')} ({fault}); nothing was skipped, the batch is "
                "retried from its checkpoint"
            )
        time.sleep(delay)
        delay = min(delay * 2, 5.0)


def _json_or_none(resp: requests.Response) -> Any:
    try:
        return resp.json()
    except ValueError:
        return None


def fetch_range(
    url: str,
    since: int,
    until: int,
    timeout: float,
    *,
    stream: str | None = None,
    patience: float = 120.0,
) -> Iterator[tuple[int, str]]:
    """Yield ``(sequence, raw_json)`` for since < sequence <= until, checking contiguity and,
    when ``stream`` is given, that the server still serves that stream."""
    pings_url = _base_url(url) + "/pings"
    expected = since + 1
    with requests.Session() as http:
        while expected <= until:
            limit = min(until - expected + 1, 10000)
            params = {"since": expected - 1, "limit": limit}
            resp, records = _get_retrying(http, pings_url, params, timeout, patience)
            served = resp.headers.get("X-Stream-Id")
            if stream and served and served != stream:
                raise SourceResetError(
                    f"fleetsim-beta at {pings_url} now serves stream {served}, not stream "
                    f"{stream} of the offsets being read ({since + 1}..{until}): it was reset "
                    "or replaced; those records cannot be read"
                )
            if resp.status_code == 410:
                oldest = records.get("oldest_available") if isinstance(records, dict) else None
                raise SourceResetError(
                    f"fleetsim-beta at {pings_url} no longer holds sequences {expected}.."
                    f"{(oldest - 1) if isinstance(oldest, int) else '?'} "
                    f"(oldest available: {oldest}); records in that range are lost upstream"
                )
            _check_status(resp)
            if not isinstance(records, list) or not records:
                raise SourceResetError(
                    f"fleetsim-beta at {pings_url} returned no records for since={expected - 1}"
                    f" although its head was at least {until}: it lost records it had served"
                )
            for record in records:
                if not isinstance(record, dict) or "sequence" not in record:
                    # a broken record in its place (the answer is contiguous): read it, the
                    # job quarantines it (not a JSON object / no sequence) with its raw text
                    yield expected, json.dumps(record, separators=(",", ":"))
                    expected += 1
                    if expected > until:
                        break
                    continue
                seq = record.get("sequence")
                if seq != expected:
                    raise SourceResetError(
                        f"fleetsim-beta sequence gap: expected {expected}, got {seq!r}"
                    )
                yield seq, json.dumps(record, separators=(",", ":"))
                expected += 1
                if expected > until:
                    break
