from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from streamops.cluster.client import MasterClient, submission_request
from streamops.exceptions import ClusterError, ClusterNotRunning
from streamops.settings import Settings

ROUTES: dict[tuple[str, str], tuple[int, Any]] = {}
SEEN: list[tuple[str, str, Any]] = []


class FakeMaster(BaseHTTPRequestHandler):
    def _answer(self, method: str) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length)) if length else None
        SEEN.append((method, self.path, body))
        code, payload = ROUTES.get((method, self.path), (404, "<html>nope</html>"))
        data = payload.encode() if isinstance(payload, str) else json.dumps(payload).encode()
        self.send_response(code)
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:  # noqa: N802
        self._answer("GET")

    def do_POST(self) -> None:  # noqa: N802
        self._answer("POST")

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def client() -> Iterator[MasterClient]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeMaster)
    port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    ROUTES.clear()
    SEEN.clear()
    try:
        yield MasterClient(Settings.from_env({}, master_webui_port=port, rest_port=port))
    finally:
        server.shutdown()
        server.server_close()


def test_state_and_typed_views(client: MasterClient) -> None:
    ROUTES[("GET", "/json/")] = (200, {
        "url": "spark://127.0.0.1:7077", "status": "ALIVE",
        "workers": [{"id": "w1", "host": "127.0.0.1", "port": 1, "state": "ALIVE",
                     "cores": 4, "coresused": 1, "memory": 4096, "memoryused": 512}],
        "activeapps": [{"id": "app-1", "name": "fleet", "state": "RUNNING"}],
        "activedrivers": [{"id": "driver-1", "state": "RUNNING", "worker": "w1",
                           "starttime": "17"}],
        "completeddrivers": [{"id": "driver-0", "state": "FINISHED", "worker": "None"}],
    })
    assert client.state()["status"] == "ALIVE"
    assert client.workers()[0].coresused == 1
    assert client.active_apps()[0].name == "fleet"
    assert client.active_drivers()[0].starttime == 17
    assert client.completed_drivers()[0].worker == ""
    assert client.is_alive()


def test_create_submission(client: MasterClient) -> None:
    ROUTES[("POST", "/v1/submissions/create")] = (200, {
        "action": "CreateSubmissionResponse", "success": True,
        "submissionId": "driver-20260101-0001"})
    body = submission_request(
        app_resource="file:/x.jar", main_class="org.apache.spark.deploy.PythonRunner",
        app_args=["/job.py", ""], client_spark_version="4.3.0",
        spark_properties={"spark.master": "spark://h:1", "spark.app.name": "j",
                          "spark.driver.supervise": "true"})
    assert client.create_submission(body) == "driver-20260101-0001"
    assert SEEN[-1][2] == {
        "action": "CreateSubmissionRequest", "appResource": "file:/x.jar",
        "mainClass": "org.apache.spark.deploy.PythonRunner", "appArgs": ["/job.py", ""],
        "sparkProperties": {"spark.master": "spark://h:1", "spark.app.name": "j",
                            "spark.driver.supervise": "true"},
        "environmentVariables": {}, "clientSparkVersion": "4.3.0"}


def test_refused_submission_quotes_spark(client: MasterClient) -> None:
    ROUTES[("POST", "/v1/submissions/create")] = (400, {
        "action": "ErrorResponse", "success": False,
        "message": "Malformed request: Main class is missing.\n\tat org.apache.X(X.java:1)"})
    with pytest.raises(ClusterError) as err:
        client.create_submission({"action": "CreateSubmissionRequest"})
    assert str(err.value).endswith("refused the submission: Malformed request: Main class is "
                                   "missing.")


def test_status_and_kill(client: MasterClient) -> None:
    ROUTES[("GET", "/v1/submissions/status/driver-1")] = (200, {
        "success": True, "driverState": "RUNNING", "workerId": "w1",
        "workerHostPort": "127.0.0.1:1"})
    ROUTES[("POST", "/v1/submissions/kill/driver-1")] = (200, {
        "success": False, "message": "Driver driver-1 has already finished or does not exist"})
    status = client.submission_status("driver-1")
    assert (status.found, status.driver_state, status.worker_host_port) == (
        True, "RUNNING", "127.0.0.1:1")
    killed = client.kill_submission("driver-1")
    assert not killed.success and "already finished" in killed.message


def test_non_json_answer(client: MasterClient) -> None:
    ROUTES[("GET", "/json/")] = (200, "<html><body>some other program</body></html>")
    with pytest.raises(ClusterError, match="without JSON: is another program"):
        client.state()


def test_a_master_still_attaching_its_pages_is_not_running_yet(client: MasterClient) -> None:
    """Spark's UI listens before its "/json" page is attached: "/" answers "/json/" with the
    HTML status page for a moment. That is a master starting, not another program."""
    ROUTES[("GET", "/json/")] = (200, '<!DOCTYPE html><html data-bs-theme="light"><head>'
                                      "<title>Spark Master at spark://127.0.0.1:7077</title>")
    with pytest.raises(ClusterNotRunning, match="still attaching its web pages"):
        client.state()
    assert not client.is_alive()


def test_submission_request_needs_master_and_name() -> None:
    with pytest.raises(ClusterError, match="spark.app.name"):
        submission_request(app_resource="a", main_class="b", app_args=[],
                           client_spark_version="4.3.0",
                           spark_properties={"spark.master": "spark://h:1"})


def test_submission_request_refuses_reserved_environment() -> None:
    with pytest.raises(ClusterError, match="STREAMOPS_DAEMON"):
        submission_request(app_resource="a", main_class="b", app_args=[],
                           client_spark_version="4.3.0", environment={"STREAMOPS_DAEMON": "x"},
                           spark_properties={"spark.master": "spark://h:1", "spark.app.name": "j"})


def test_connection_refused_is_cluster_not_running() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    client = MasterClient(Settings.from_env({}, master_webui_port=port, rest_port=port))
    with pytest.raises(ClusterNotRunning) as err:
        client.state()
    assert f"http://127.0.0.1:{port}/json/" in str(err.value)
    assert "streamops cluster start" in str(err.value)
    with pytest.raises(ClusterNotRunning, match="REST server"):
        client.submission_status("driver-x")
    assert not client.is_alive()


def test_a_patient_client_waits_for_a_master_that_comes_back() -> None:
    """A procedure's client (``master_patience``) rides out a master restarted in its middle:
    the first calls are refused, then a real server answers on the same port. ``is_alive``
    stays a look, not a wait."""
    import time

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    settings = Settings.from_env({}, master_webui_port=port, rest_port=port)
    patient = MasterClient(settings.model_copy(update={"master_patience": 20.0}))
    ROUTES.clear()
    ROUTES[("GET", "/json/")] = (200, {"status": "ALIVE", "workers": []})
    servers: list[ThreadingHTTPServer] = []

    def come_back() -> None:
        time.sleep(1.5)
        server = ThreadingHTTPServer(("127.0.0.1", port), FakeMaster)
        servers.append(server)
        server.serve_forever()

    threading.Thread(target=come_back, daemon=True).start()
    t0 = time.monotonic()
    assert not patient.is_alive()  # at once
    assert time.monotonic() - t0 < 1.0
    try:
        assert patient.state()["status"] == "ALIVE"
        assert time.monotonic() - t0 >= 1.0
    finally:
        for server in servers:
            server.shutdown()
            server.server_close()
    impatient = MasterClient(settings.model_copy(update={"master_patience": 1.0}))
    t0 = time.monotonic()
    with pytest.raises(ClusterNotRunning):
        impatient.state()  # no master any more: waited 1 s, then failed
    assert 1.0 <= time.monotonic() - t0 < 5.0


def test_a_patient_client_waits_out_the_masters_recovery(client: MasterClient) -> None:
    """A master started again lists no driver or application while it is RECOVERING: a
    procedure that read that would take its job for ended. A patient call waits; an
    impatient one (health) reports what it sees."""
    import time

    ROUTES[("GET", "/json/")] = (200, {"status": "RECOVERING", "activedrivers": []})

    def recovered() -> None:
        time.sleep(1.5)
        ROUTES[("GET", "/json/")] = (200, {"status": "ALIVE", "activedrivers": [{"id": "d-1"}]})

    assert client.state()["status"] == "RECOVERING"  # no patience: what it is now
    patient = MasterClient(client.settings.model_copy(update={"master_patience": 20.0}))
    threading.Thread(target=recovered, daemon=True).start()
    t0 = time.monotonic()
    assert patient.state()["status"] == "ALIVE"
    assert time.monotonic() - t0 >= 1.0
