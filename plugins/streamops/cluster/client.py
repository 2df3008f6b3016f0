"""A client of one Spark standalone master: its JSON state and its REST submission server.

Two endpoints of the master are used (both bound to the master host, loopback by default):

- ``GET  http://<host>:<webui>/json/`` — workers, apps and drivers (:meth:`MasterClient.state`);
- ``http://<host>:<rest>/v1/submissions/{create,kill/<id>,status/<id>}`` — cluster-mode
  drivers. A create request is the JSON of Spark's ``CreateSubmissionRequest`` (see
  :func:`submission_request`); every response carries ``success`` and, on failure,
  Spark's ``message``.

A master that does not answer raises :class:`ClusterNotRunning`; a master that refuses an
operation raises :class:`ClusterError` with Spark's message.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import requests
from requests.adapters import HTTPAdapter
from urllib3.util.retry import Retry

from streamops.cluster import rest_auth
from streamops.exceptions import ClusterError, ClusterNotRunning
from streamops.settings import Settings

log = logging.getLogger("streamops.cluster.client")

SUBMISSIONS_PATH = "/v1/submissions"
RESERVED_ENVIRONMENT = ("STREAMOPS_CLUSTER", "STREAMOPS_DAEMON")
# the titles of the master's and a worker's HTML status pages (MasterPage, WorkerPage)
SPARK_PAGE_TITLES = ("Spark Master at spark://", "Spark Worker at ")
START_HINT = "start the local cluster with `streamops cluster start` or check the settings"


@dataclass(frozen=True)
class WorkerInfo:
    """A worker as the master sees it (``workers`` of ``/json/``)."""

    id: str
    host: str
    port: int
    webuiaddress: str
    state: str
    cores: int
    coresused: int
    memory: int
    memoryused: int
    lastheartbeat: int

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> WorkerInfo:
        return cls(
            id=str(data.get("id", "")),
            host=str(data.get("host", "")),
            port=int(data.get("port", 0)),
            webuiaddress=str(data.get("webuiaddress", "")),
            state=str(data.get("state", "")),
            cores=int(data.get("cores", 0)),
            coresused=int(data.get("coresused", 0)),
            memory=int(data.get("memory", 0)),
            memoryused=int(data.get("memoryused", 0)),
            lastheartbeat=int(data.get("lastheartbeat", 0)),
        )


@dataclass(frozen=True)
class AppInfo:
    """An application (a running SparkContext) as the master sees it."""

    id: str
    name: str
    state: str
    cores: int
    memoryperexecutor: int
    starttime: int
    duration: int

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> AppInfo:
        return cls(
            id=str(data.get("id", "")),
            name=str(data.get("name", "")),
            state=str(data.get("state", "")),
            cores=int(data.get("cores", 0)),
            memoryperexecutor=int(data.get("memoryperexecutor", 0)),
            starttime=int(data.get("starttime", 0)),
            duration=int(data.get("duration", 0)),
        )


@dataclass(frozen=True)
class DriverInfo:
    """A cluster-mode driver as the master sees it; ``worker`` is a worker id or ``""``."""

    id: str
    state: str
    worker: str
    mainclass: str
    cores: int
    memory: int
    starttime: int

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> DriverInfo:
        worker = data.get("worker")
        return cls(
            id=str(data.get("id", "")),
            state=str(data.get("state", "")),
            worker="" if worker in (None, "None") else str(worker),
            mainclass=str(data.get("mainclass", "")),
            cores=int(data.get("cores", 0)),
            memory=int(data.get("memory", 0)),
            starttime=int(data.get("starttime", 0)),
        )


@dataclass(frozen=True)
class SubmissionStatus:
    """Answer of ``GET /v1/submissions/status/<id>``; ``found`` is Spark's ``success``."""

    driver_id: str
    found: bool
    driver_state: str | None
    worker_id: str | None
    worker_host_port: str | None
    message: str | None


@dataclass(frozen=True)
class KillResult:
    """Answer of ``POST /v1/submissions/kill/<id>``; not ``success`` if already finished."""

    driver_id: str
    success: bool
    message: str


def submission_request(
    *,
    app_resource: str,
    main_class: str,
    app_args: Sequence[str],
    spark_properties: Mapping[str, str],
    client_spark_version: str,
    environment: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The body of a ``CreateSubmissionRequest``.

    ``spark_properties`` must contain ``spark.master`` and ``spark.app.name``; values must be
    strings (Spark validates booleans, numbers and memory sizes). The REST server hands
    ``environment`` to the driver as given (only ``spark-submit`` limits it to ``SPARK_*``);
    the driver also inherits its worker's environment (``PYSPARK_PYTHON`` among it).
    """
    missing = [k for k in ("spark.master", "spark.app.name") if k not in spark_properties]
    if missing:
        raise ClusterError(f"submission is missing spark properties {missing}; set them")
    reserved = sorted(set(environment or {}) & set(RESERVED_ENVIRONMENT))
    if reserved:
        raise ClusterError(
            f"submission environment sets {reserved}, which the local cluster uses to find "
            "the processes of its daemons; remove them"
        )
    return {
        "action": "CreateSubmissionRequest",
        "appResource": app_resource,
        "mainClass": main_class,
        "appArgs": [str(a) for a in app_args],
        "sparkProperties": {str(k): str(v) for k, v in spark_properties.items()},
        "environmentVariables": dict(environment or {}),
        "clientSparkVersion": client_spark_version,
    }


def _session() -> requests.Session:
    """HTTP to the master: a GET whose answer was lost (the master's Jetty closing a kept-alive
    connection, seen under load) is sent again; a refused connection still fails at once."""
    retry = Retry(total=2, connect=0, read=2, status=0, redirect=0, backoff_factor=0.2,
                  allowed_methods=frozenset({"GET"}))  # fmt: skip
    session = requests.Session()
    session.mount("http://", HTTPAdapter(max_retries=retry))
    return session


def _is_spark_status_page(text: str) -> bool:
    return "<html" in text and any(title in text for title in SPARK_PAGE_TITLES)


RECOVERING = ("RECOVERING", "COMPLETING_RECOVERY")
"""A master started again lists no driver or application until its recovery completes: a
patient call waits it out (a procedure would take the job for ended)."""


class MasterClient:
    """Reads the master's state and submits, kills and queries cluster-mode drivers."""

    def __init__(
        self,
        settings: Settings,
        timeout: float = 5.0,
        session: requests.Session | None = None,
    ) -> None:
        self.settings = settings
        self.webui_url = settings.webui_url
        self.rest_url = settings.rest_url
        self.timeout = timeout
        self._http = session or _session()

    # --- transport -------------------------------------------------------------------
    def _request(
        self, method: str, url: str, what: str, *, patient: bool = True, **kwargs: Any
    ) -> dict[str, Any]:
        """One call; while the master does not answer, retried every second for the
        settings' ``master_patience`` (a master restarting), then ``ClusterNotRunning``. A
        worker's page is not waited for (its node may be gone), nor a POST that timed out
        (the master may have acted on it: a submission is never sent twice)."""
        ours = url.startswith(self.webui_url) or url.startswith(self.rest_url)
        patience = self.settings.master_patience if patient and ours else 0.0
        deadline = time.monotonic() + patience
        warned = False
        while True:
            try:
                answer = self._request_once(method, url, what, **kwargs)
            except ClusterNotRunning as exc:
                unsure = method != "GET" and isinstance(exc.__cause__, requests.Timeout)
                if unsure or time.monotonic() >= deadline:
                    raise
                why = str(exc)
            else:
                recovering = answer.get("status") in RECOVERING
                if not patience or not recovering or time.monotonic() >= deadline:
                    return answer
                why = (f"the Spark master is {answer['status']} (it reads its recovery files: "
                       "drivers and applications not listed yet)")  # fmt: skip
            if not warned:
                log.warning("%s; waiting up to %.0f s for the master", why, patience)
                warned = True
            time.sleep(1.0)

    def _request_once(self, method: str, url: str, what: str, **kwargs: Any) -> dict[str, Any]:
        if url.startswith(self.rest_url):
            kwargs["headers"] = {**kwargs.get("headers", {}), **rest_auth.headers(self.settings)}
        try:
            response = self._http.request(method, url, timeout=self.timeout, **kwargs)
        except requests.ConnectionError as exc:
            raise ClusterNotRunning(
                f"the Spark master {what} at {url} does not answer (connection failed); "
                f"{START_HINT}"
            ) from exc
        except requests.Timeout as exc:
            raise ClusterNotRunning(
                f"the Spark master {what} at {url} did not answer within {self.timeout}s; "
                f"check its log under <state>/cluster/logs/master.log"
            ) from exc
        if response.status_code in (401, 403) and url.startswith(self.rest_url):
            raise ClusterError(
                f"the master's REST server at {self.rest_url} refused the request (HTTP "
                f"{response.status_code}): it requires a token signed with the key in "
                f"{rest_auth.secret_file(self.settings)}, and this one was missing or "
                "signed with another key (a state root other than the cluster's?)"
            )
        try:
            payload = response.json()
        except ValueError as exc:
            if response.status_code in (404, 503):  # a Spark UI whose pages are not yet up
                raise ClusterNotRunning(
                    f"{url} answered HTTP {response.status_code} without JSON: the master "
                    "is still starting, or another program uses its port"
                ) from exc
            if _is_spark_status_page(response.text):
                # Spark's web UI listens before it has attached all its pages: for a moment
                # "/" answers every path, "/json/" included, with the HTML status page
                raise ClusterNotRunning(
                    f"{url} answered with Spark's HTML status page instead of JSON: the "
                    "daemon is still attaching its web pages"
                ) from exc
            raise ClusterError(
                f"{url} answered HTTP {response.status_code} without JSON: is another program "
                f"using the master's port? ({response.text[:200]!r})"
            ) from exc
        if not isinstance(payload, dict):
            raise ClusterError(f"{url} answered unexpected JSON: {str(payload)[:200]}")
        return payload

    # --- state -----------------------------------------------------------------------
    def state(self) -> dict[str, Any]:
        """The master's ``/json/`` document (url, status, workers, apps, drivers, ...)."""
        return self._request("GET", f"{self.webui_url}/json/", "web UI")

    def is_alive(self) -> bool:
        """Whether the master answers now (no patience: a look, not a wait)."""
        try:
            self._request("GET", f"{self.webui_url}/json/", "web UI", patient=False)
        except ClusterNotRunning:
            return False
        return True

    def workers(self) -> list[WorkerInfo]:
        return [WorkerInfo.from_json(w) for w in self.state().get("workers", [])]

    def active_apps(self) -> list[AppInfo]:
        return [AppInfo.from_json(a) for a in self.state().get("activeapps", [])]

    def active_drivers(self) -> list[DriverInfo]:
        return [DriverInfo.from_json(d) for d in self.state().get("activedrivers", [])]

    def completed_drivers(self) -> list[DriverInfo]:
        return [DriverInfo.from_json(d) for d in self.state().get("completeddrivers", [])]

    def worker_state(self, webuiaddress: str) -> dict[str, Any]:
        """A worker's own ``/json/`` (its id, cores, and running ``executors``)."""
        return self._request("GET", f"{webuiaddress.rstrip('/')}/json/", "worker web UI")

    # --- submissions -----------------------------------------------------------------
    def create_submission(self, body: Mapping[str, Any]) -> str:
        """Submit a driver (see :func:`submission_request`); return its submission id."""
        url = f"{self.rest_url}{SUBMISSIONS_PATH}/create"
        payload = self._request("POST", url, "REST server", json=dict(body))
        if not payload.get("success") or not payload.get("submissionId"):
            message = str(payload.get("message") or payload).strip()
            raise ClusterError(  # Spark appends a Java stack trace: keep its first line
                f"the master refused the submission: {message.splitlines()[0]}"
            )
        return str(payload["submissionId"])

    def kill_submission(self, driver_id: str) -> KillResult:
        url = f"{self.rest_url}{SUBMISSIONS_PATH}/kill/{driver_id}"
        payload = self._request("POST", url, "REST server")
        return KillResult(
            driver_id=driver_id,
            success=bool(payload.get("success")),
            message=str(payload.get("message") or ""),
        )

    def submission_status(self, driver_id: str) -> SubmissionStatus:
        url = f"{self.rest_url}{SUBMISSIONS_PATH}/status/{driver_id}"
        payload = self._request("GET", url, "REST server")
        return SubmissionStatus(
            driver_id=driver_id,
            found=bool(payload.get("success")),
            driver_state=payload.get("driverState"),
            worker_id=payload.get("workerId"),
            worker_host_port=payload.get("workerHostPort"),
            message=payload.get("message"),
        )


def free_cores(workers: list[WorkerInfo]) -> int:
    """Cores the ALIVE ``workers`` offer that no driver or executor holds."""
    return sum(w.cores - w.coresused for w in workers if w.state == "ALIVE")


def executor_room(workers: list[WorkerInfo], executor_cores: int, driver_cores: int = 0) -> int:
    """How many executors of ``executor_cores`` the ALIVE ``workers`` can start now (an
    executor's cores are on one worker), after a driver of ``driver_cores`` (0: none) placed
    where it leaves the fewest: the master picks a driver's worker at random. 0 if no worker
    has room for the driver."""
    free = [w.cores - w.coresused for w in workers if w.state == "ALIVE"]
    room = [f // executor_cores for f in free]
    if driver_cores <= 0:
        return sum(room)
    after = [
        sum(room) - room[i] + (f - driver_cores) // executor_cores
        for i, f in enumerate(free)
        if f >= driver_cores
    ]
    return min(after, default=0)
