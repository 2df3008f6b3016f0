"""fleetsim-beta answering badly, then well (a real HTTP server on loopback, ``http.server`` in a
thread): a body cut short at the transport level, a body that is not JSON, a ``/head`` that is
a 4xx or not an object. The source degrades (no new data, the fault counted in its state) or
retries, and the rows read afterwards are exactly the rows served: nothing skipped."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest
from pyspark.sql.streaming.datasource import ReadAllAvailable
from support.source_rows import read_rows

from spark_jobs.sources.beta import BetaRange, BetaStreamReader

RECORDS = 30
STREAM = "s1"
SERVED = [json.dumps({"sequence": n, "vin": f"V{n:03d}", "speed": n * 1.5}) for n in
          range(1, RECORDS + 1)]  # fmt: skip
HEAD = {"first": 1, "last": RECORDS, "emitted": RECORDS, "stream": STREAM}


class Beta(ThreadingHTTPServer):
    """A fleetsim-beta that gives each path's queued faults first, one per request."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.faults: dict[str, list[str]] = {"/head": [], "/pings": []}
        self.lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/pings"

    def next_fault(self, path: str) -> str | None:
        with self.lock:
            queue = self.faults.get(path, [])
            return queue.pop(0) if queue else None


class _Handler(BaseHTTPRequestHandler):
    server: Beta

    def log_message(self, *_: Any) -> None:
        pass

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        url = urlparse(self.path)
        if url.path == "/head":
            body = json.dumps(HEAD).encode()
        elif url.path == "/pings":
            query = {k: int(v[0]) for k, v in parse_qs(url.query).items()}
            since, limit = query["since"], query["limit"]
            body = ("[" + ",".join(SERVED[since : since + limit]) + "]").encode()
        else:
            self.send_error(404)
            return
        fault = self.server.next_fault(url.path)
        if fault == "4xx":
            self._answer(429, b"slow down", "text/plain")
        elif fault == "not-json":
            self._answer(200, b"<html>proxy error</html>", "text/html")
        elif fault == "not-an-object":
            self._answer(200, b"[1, 2]", "application/json")
        elif fault == "cut":  # a Content-Length the body does not reach
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("X-Stream-Id", STREAM)
            self.end_headers()
            self.wfile.write(body[: len(body) // 2])
            self.close_connection = True
        elif fault == "chunk-cut":  # a chunk announced and not sent whole
            self.protocol_version = "HTTP/1.1"
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Transfer-Encoding", "chunked")
            self.send_header("X-Stream-Id", STREAM)
            self.end_headers()
            self.wfile.write(f"{len(body):x}\r\n".encode() + body[: len(body) // 2])
            self.close_connection = True
        else:
            self._answer(200, body, "application/json")

    def _answer(self, code: int, body: bytes, kind: str) -> None:
        self.send_response(code)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("X-Stream-Id", STREAM)
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def beta() -> Iterator[Beta]:
    server = Beta()
    thread = threading.Thread(target=server.serve_forever, name="beta", daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


def reader(url: str, tmp_path: Path, **options: str) -> BetaStreamReader:
    return BetaStreamReader({"url": url, "source_id": "fleetsim-beta",
                             "state_dir": str(tmp_path / "state"), **options})  # fmt: skip


def state_file(tmp_path: Path) -> dict[str, Any]:
    return json.loads((tmp_path / "state" / "fleetsim-beta" / f"{os.getpid()}.json").read_text())


def rows_of(source: BetaStreamReader, start: dict, end: dict) -> list[tuple[int, str]]:
    return [(seq, raw) for p in source.partitions(start, end) for seq, raw in read_rows(source, p)]


def exactly_served() -> list[tuple[int, str]]:
    return [(n, json.dumps(json.loads(raw), separators=(",", ":"))) for n, raw in
            enumerate(SERVED, start=1)]  # fmt: skip


START = {"source": "fleetsim-beta", "sequence": 0, "stream": STREAM}


@pytest.mark.parametrize("fault", ["cut", "chunk-cut", "not-json", "4xx", "not-an-object"])
def test_a_bad_head_degrades_the_source_then_it_reads_every_record(
    beta: Beta, tmp_path: Path, fault: str
) -> None:
    source = reader(beta.url, tmp_path)
    beta.faults["/head"] = [fault, fault]
    assert source.latestOffset(START, ReadAllAvailable()) == START  # no new data, no failure
    doc = state_file(tmp_path)
    assert doc["state"] == "degraded" and doc["failures"] == 1
    assert "/head" in doc["reason"] or "did not answer" in doc["reason"]
    source.state._next_try = 0.0  # the backoff has passed: asked again, still bad
    assert source.latestOffset(START, ReadAllAvailable()) == START
    assert state_file(tmp_path)["failures"] == 2  # counted where the status shows it
    source.state._next_try = 0.0
    end = source.latestOffset(START, ReadAllAvailable())
    assert end["sequence"] == RECORDS and state_file(tmp_path)["state"] == "ok"
    assert rows_of(source, START, end) == exactly_served()


@pytest.mark.parametrize("fault", ["cut", "chunk-cut", "not-json"])
def test_a_partition_whose_answer_is_cut_short_is_asked_again(
    beta: Beta, tmp_path: Path, fault: str
) -> None:
    source = reader(beta.url, tmp_path, read_patience="60", partition_size="10")
    beta.faults["/pings"] = [fault, fault]
    assert rows_of(source, START, {**START, "sequence": RECORDS}) == exactly_served()
    assert beta.faults["/pings"] == []  # both bad answers were given, and retried


def test_a_spooled_fetch_cut_short_degrades_and_then_admits_every_record(
    beta: Beta, tmp_path: Path
) -> None:
    source = reader(beta.url, tmp_path, spool_dir=str(tmp_path / "spool"))
    beta.faults["/pings"] = ["cut"]
    assert source.latestOffset(START, ReadAllAvailable()) == START
    doc = state_file(tmp_path)
    assert doc["state"] == "degraded" and "ChunkedEncodingError" in doc["reason"]
    source.state._next_try = 0.0
    end = source.latestOffset(START, ReadAllAvailable())
    assert end["sequence"] == RECORDS and state_file(tmp_path)["state"] == "ok"
    assert rows_of(source, START, end) == exactly_served()


def test_a_partition_read_still_fails_clearly_when_the_server_never_behaves(
    beta: Beta, tmp_path: Path
) -> None:
    source = reader(beta.url, tmp_path, read_patience="1")
    beta.faults["/pings"] = ["cut"] * 50
    with pytest.raises(Exception, match="unreachable for 1s while reading since=0") as info:
        read_rows(source, BetaRange(0, 10, STREAM))
    assert "nothing was skipped" in str(info.value)
