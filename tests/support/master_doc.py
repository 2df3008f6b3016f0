"""A Spark master's ``/json/`` document served on loopback: a real master's document
(captured, ``tests/unit/cluster/data/master_waiting.json``) resized to a small cluster of two
4-core workers with ``transactions`` running (a driver and a 1-core executor), for the
capacity and admission tests."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

RECORDED = Path(__file__).resolve().parents[1] / "unit" / "cluster" / "data" / "master_waiting.json"


WORKER = "worker-20260101000000-127.0.0.1-40123"


def running_drivers_doc(*drivers: str) -> dict[str, Any]:
    """A master's document of one ALIVE 4-core worker running ``drivers`` (1 core each)."""
    return {
        "status": "ALIVE", "activeapps": [], "completeddrivers": [],
        "workers": [{"id": WORKER, "host": "127.0.0.1", "port": 40123, "state": "ALIVE",
                     "cores": 4, "coresused": 1, "memory": 4096, "memoryused": 1024}],
        "activedrivers": [{"id": d, "state": "RUNNING", "worker": WORKER, "cores": 1,
                           "memory": 1024, "starttime": "1767225600000",
                           "mainclass": "org.apache.spark.deploy.PythonRunner"}
                          for d in drivers],
    }  # fmt: skip


def issue_master() -> dict[str, Any]:
    doc = json.loads(RECORDED.read_text())
    for w in doc["workers"]:
        w.update(cores=4, coresused=2, coresfree=2, memory=4096, memoryused=1024,
                 memoryfree=3072)  # fmt: skip
    doc["activeapps"] = [a for a in doc["activeapps"] if a["name"] == "transactions"]
    return doc  # type: ignore[no-any-return]


@contextmanager
def serving(doc: dict[str, Any]) -> Iterator[int]:
    """A loopback HTTP server answering every GET with ``doc``; its port."""
    body = json.dumps(doc).encode()

    class Master(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Master)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()
