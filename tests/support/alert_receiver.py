"""Alert receivers on loopback for the notifier tests: one that takes every POST (a real HTTP
server in a thread, keeping each body it got), one that accepts connections and never answers,
and an address where nothing listens (refused)."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class Receiver:
    """The bodies POSTed to it, oldest first; ``url`` is where to post."""

    def __init__(self, server: ThreadingHTTPServer) -> None:
        self.url = f"http://127.0.0.1:{server.server_address[1]}/api/v2/alerts"
        self.bodies: list[Any] = []
        self.paths: list[str] = []
        self._lock = threading.Lock()

    def took(self, path: str, body: Any) -> None:
        with self._lock:
            self.paths.append(path)
            self.bodies.append(body)

    def alerts(self) -> list[dict[str, Any]]:
        """Every alert of every Alertmanager-style body, in the order received."""
        with self._lock:
            return [a for body in self.bodies if isinstance(body, list) for a in body]

    def clear(self) -> None:
        with self._lock:
            self.bodies.clear()
            self.paths.clear()


@contextlib.contextmanager
def receiving() -> Iterator[Receiver]:
    """A webhook receiver answering ``200`` to every POST, for the block."""
    receiver: Receiver

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (the http.server API)
            length = int(self.headers.get("Content-Length") or 0)
            receiver.took(self.path, json.loads(self.rfile.read(length) or b"null"))
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    receiver = Receiver(server)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), name="alert-receiver",
                              daemon=True)  # fmt: skip
    thread.start()
    try:
        yield receiver
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


@contextlib.contextmanager
def hanging() -> Iterator[str]:
    """The URL of a receiver that accepts connections (the kernel's backlog does) and never
    answers a request."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}/api/v2/alerts"


def refused() -> str:
    """The URL of a port nothing listens on (bound for a moment, then closed)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/api/v2/alerts"
