"""The master client sends a GET again when the master dropped the connection unanswered."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator

import pytest

from streamops.cluster.client import _session


class DropFirst(http.server.BaseHTTPRequestHandler):
    calls = 0

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        type(self).calls += 1
        if type(self).calls == 1:
            self.connection.close()  # closed without an answer, as Jetty does under load
            return
        body = json.dumps({"status": "ALIVE"}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[str]:
    DropFirst.calls = 0
    srv = http.server.HTTPServer(("127.0.0.1", 0), DropFirst)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()
    srv.server_close()


def test_a_dropped_get_is_sent_again(server: str) -> None:
    assert _session().get(f"{server}/json/", timeout=5).json() == {"status": "ALIVE"}
    assert DropFirst.calls == 2

