"""fleetsim-beta over HTTP: its head, and a range of its records read back exactly.

The server's answers are checked as they come: a range it no longer holds (HTTP 410), a
stream other than the one asked for (``X-Stream-Id``), a gap or an empty answer where records
were promised are :class:`SourceResetError` naming the positions; a server that does not answer
or answers 5xx is retried for a bounded patience, then :class:`BetaSourceError`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import requests

from spark_jobs.sources.source_state import SourceResetError


class BetaSourceError(RuntimeError):
    """The beta server answered garbage, or could not be reached for too long."""


TRANSIENT = (requests.ConnectionError, requests.Timeout)
"""Faults of the way to the server, not of its data: retried, never a loss."""


def _base_url(url: str) -> str:
    return url.rstrip("/").removesuffix("/pings")


def _check_status(resp: requests.Response) -> None:
    """Raise on an error answer: a 5xx as a transient fault (the server is struggling), any
    other as :class:`BetaSourceError`."""
    if resp.status_code >= 500:
        raise requests.ConnectionError(f"HTTP {resp.status_code} from {resp.url}")
    if resp.status_code >= 400:
        raise BetaSourceError(f"HTTP {resp.status_code} from {resp.url}: {resp.text[:200]}")


def fetch_head(url: str, timeout: float) -> dict[str, Any]:
    resp = requests.get(f"{_base_url(url)}/head", timeout=timeout)
    _check_status(resp)
    return dict(resp.json())


def _get_retrying(
    http: requests.Session, url: str, params: dict[str, int], timeout: float, patience: float
) -> requests.Response:
    """GET with capped backoff on transient faults, for at most ``patience`` seconds."""
    deadline = time.monotonic() + patience
    delay = 0.5
    while True:
        try:
            resp = http.get(url, params=params, timeout=timeout)
            if resp.status_code < 500:
                return resp
            fault: str = f"HTTP {resp.status_code}"
        except TRANSIENT as exc:
            fault = f"{type(exc).__name__}: {exc}"
        if time.monotonic() + delay > deadline:
            raise BetaSourceError(
                f"fleetsim-beta at {url} unreachable for {patience:.0f}s while reading "
                f"since={params.get('since')} ({fault}); nothing was skipped, the batch is "
                "retried from its checkpoint"
            )
        time.sleep(delay)
        delay = min(delay * 2, 5.0)


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
            resp = _get_retrying(http, pings_url, params, timeout, patience)
            served = resp.headers.get("X-Stream-Id")
            if stream and served and served != stream:
                raise SourceResetError(
                    f"fleetsim-beta at {pings_url} now serves stream {served}, not stream "
                    f"{stream} of the offsets being read ({since + 1}..{until}): it was reset "
                    "or replaced; those records cannot be read"
                )
            if resp.status_code == 410:
                body = resp.json()
                oldest = body.get("oldest_available")
                raise SourceResetError(
                    f"fleetsim-beta at {pings_url} no longer holds sequences {expected}.."
                    f"{(oldest - 1) if isinstance(oldest, int) else '?'} "
                    f"(oldest available: {oldest}); records in that range are lost upstream"
                )
            _check_status(resp)
            try:
                records = resp.json()
            except ValueError as exc:  # a body cut short: the range is asked again
                raise BetaSourceError(
                    f"fleetsim-beta at {pings_url} answered a body that is not JSON for "
                    f"since={expected - 1} ({exc}); nothing was skipped"
                ) from exc
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
