"""The node agent: HTTP on its node's address (``STREAMOPS_NODE_HOST``, else the master's;
loopback for the embedded cluster), one per Spark node, token-authenticated.

Endpoints (JSON; every error is ``{"error": "..."}`` naming what was wrong)::

    GET  /v1/health                           liveness, no token needed
    GET  /v1/nodes/{node}                     role, daemon running, pid, active release
    POST /v1/nodes/{node}/daemon/start        start the node's Spark daemon (idempotent)
    POST /v1/nodes/{node}/daemon/stop         stop it (SIGTERM, then its process group)
    POST /v1/nodes/{node}/daemon/decommission graceful worker removal (SIGPWR, drain, stop)
    POST /v1/nodes/{node}/daemon/kill         kill it at once (tests, a sick node)
    GET  /v1/releases                         known jar releases and the active one
    POST /v1/nodes/{node}/release             {"release": "r2"}: switch the active release

The daemon work is a :class:`NodeDaemon`; :class:`SparkNode` is the real one (over
:class:`~streamops.cluster.node.NodeDaemons`), unit tests give a fake. A
:class:`~streamops.agent.supervisor.Supervisor` starts the daemon again when it dies while it
is wanted (a start request makes it wanted; a stop, kill or decommission request does not).
"""

from __future__ import annotations

import hmac
import logging
import os
import socket
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Literal, Protocol

from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel

from streamops import processes
from streamops.agent import registry
from streamops.agent.supervision import RestartPolicy
from streamops.agent.supervisor import Supervisor
from streamops.cluster import daemons
from streamops.cluster.daemons import MASTER_NAME
from streamops.cluster.node import NodeDaemons
from streamops.cluster.releases import ReleaseStore
from streamops.cluster.status import match_worker
from streamops.exceptions import ClusterNotRunning, StreamopsError, UnknownRelease
from streamops.processes import read_cmdline
from streamops.settings import Settings
from streamops_contract.hosts import binds_all

log = logging.getLogger("streamops.agent")

Action = Literal["start", "stop", "decommission", "kill"]


class NodeDaemon(Protocol):
    """The Spark daemon of one node, as the agent acts on it."""

    node: str
    role: str

    def pid(self) -> int | None: ...

    def worker_id(self) -> str | None: ...

    def start(self) -> None: ...

    def stop(self) -> None: ...

    def decommission(self) -> None: ...

    def kill(self) -> None: ...


class SparkNode:
    """The master or one worker of the local state root, through :class:`NodeDaemons`."""

    def __init__(self, node: str, daemons: NodeDaemons) -> None:
        self.node = node
        self.role = "master" if node == MASTER_NAME else "worker"
        self.daemons = daemons

    def pid(self) -> int | None:
        """The daemon's pid while it runs (its pid file alone: other nodes' are not read)."""
        record = daemons.read_pid_file(self.daemons.layout, self.node)
        return record.pid if record is not None and processes.is_running(record) else None

    def worker_id(self) -> str | None:
        """The id under which the master lists this worker (None for the master / if not)."""
        record = self.daemons.daemons().get(self.node)
        if self.role != "worker" or record is None:
            return None
        try:
            entry = match_worker(record, self.daemons.client.workers())
        except ClusterNotRunning:
            return None
        return entry.id if entry else None

    def start(self) -> None:
        if self.role == "master":
            self.daemons.start_master()
        else:
            self.daemons.start_worker(self.node)

    def stop(self) -> None:
        self.daemons.stop_daemon(self.node)

    def decommission(self) -> None:
        if self.role == "master":
            raise StreamopsError("the master cannot be decommissioned; stop it instead")
        self.daemons.decommission_worker(self.node)

    def kill(self) -> None:
        self.daemons.kill_daemon(self.node)


class AgentHTTPError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class ReleaseRequest(BaseModel):
    release: str


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse(status_code=status, content={"error": message})


def create_app(
    daemon: NodeDaemon,
    releases: ReleaseStore,
    token: str,
    on_startup: Callable[[], None] | None = None,
    on_shutdown: Callable[[], None] | None = None,
    supervisor: Supervisor | None = None,
) -> FastAPI:
    """The agent of ``daemon``'s node; requests must carry ``Authorization: Bearer token``.
    With a ``supervisor``, daemon requests set what it keeps running (its lock is theirs)."""
    lock = supervisor.lock if supervisor else threading.Lock()  # one daemon operation at a time

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if on_startup:
            on_startup()
        try:
            yield
        finally:
            if on_shutdown:
                on_shutdown()

    app = FastAPI(title=f"streamops agent ({daemon.node})", lifespan=lifespan)

    @app.exception_handler(AgentHTTPError)
    async def _agent_error(request: Request, exc: AgentHTTPError) -> JSONResponse:
        return _error(exc.status, exc.message)

    @app.exception_handler(UnknownRelease)
    async def _unknown_release(request: Request, exc: UnknownRelease) -> JSONResponse:
        return _error(404, str(exc))

    @app.exception_handler(StreamopsError)
    async def _failed(request: Request, exc: StreamopsError) -> JSONResponse:
        log.error("%s %s failed: %s", request.method, request.url.path, exc)
        return _error(409, str(exc))

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        first = exc.errors()[0] if exc.errors() else {}
        where = ".".join(str(p) for p in first.get("loc", ()))
        return _error(422, f"invalid request {where}: {first.get('msg', 'invalid')}")

    def authorized(request: Request) -> None:
        header = request.headers.get("authorization", "")
        scheme, _, given = header.partition(" ")
        if scheme.lower() != "bearer" or not given:
            raise AgentHTTPError(401, "missing bearer token: send 'Authorization: Bearer "
                                      "<token>' (the token is in <state>/cluster/agent.token)")
        if not hmac.compare_digest(given.strip().encode(), token.encode()):
            raise AgentHTTPError(401, "wrong bearer token for this agent")

    def served(node: str) -> None:
        if node != daemon.node:
            raise AgentHTTPError(404, f"unknown node {node!r}: this agent serves node "
                                      f"{daemon.node!r} only")

    def describe() -> dict[str, Any]:
        pid = daemon.pid()
        return {"node": daemon.node, "role": daemon.role, "running": pid is not None,
                "pid": pid, "release": releases.active(), "worker_id": daemon.worker_id()}

    @app.get("/v1/health")
    def health() -> dict[str, Any]:
        return {"status": "ok", "node": daemon.node, "role": daemon.role}

    @app.get("/v1/nodes/{node}", dependencies=[Depends(authorized)])
    def node_info(node: str) -> dict[str, Any]:
        served(node)
        return describe()

    @app.post("/v1/nodes/{node}/daemon/{action}", dependencies=[Depends(authorized)])
    def daemon_action(node: str, action: Action) -> dict[str, Any]:
        served(node)
        if supervisor is not None:
            supervisor.requested(action)  # before the lock: no restart slips in between
        with lock:
            log.info("agent %s: %s the %s daemon", daemon.node, action, daemon.role)
            before = daemon.pid()
            getattr(daemon, action)()
            if supervisor is not None:
                supervisor.done(action, before)
            info = describe()
        log.info("agent %s: %s done (running=%s, pid %s)", daemon.node, action,
                 info["running"], info["pid"])
        return info

    @app.get("/v1/releases", dependencies=[Depends(authorized)])
    def list_releases() -> dict[str, Any]:
        return {"releases": releases.known(), "active": releases.active()}

    @app.post("/v1/nodes/{node}/release", dependencies=[Depends(authorized)])
    def switch_release(node: str, body: ReleaseRequest) -> dict[str, Any]:
        served(node)
        with lock:
            switch = releases.switch(body.release)
        log.info("agent %s: active jar release %s (was %s)", daemon.node, switch.active,
                 switch.previous)
        return {"node": daemon.node, "active": switch.active, "previous": switch.previous}

    return app


def advertised_url(host: str, port: int, node_host: str = "") -> str:
    """The URL other hosts dial: the bound address, or for a bind-all address this node's
    address from the settings (``node_host``), else its host name."""
    shown = host if not binds_all(host) else (node_host or socket.gethostname())
    return f"http://{shown}:{port}"


def serve(settings: Settings, node: str, host: str | None = None, port: int = 0,
          token_file: str | None = None, profile_file: str | None = None,
          start_daemon: bool = False) -> None:
    """Run the agent of ``node`` until SIGTERM/SIGINT; registered while it serves. It binds
    ``host``, by default this node's address (``settings.local_host``).

    ``start_daemon`` starts the node's Spark daemon once the agent serves (a container whose
    node is part of the cluster from the start; a spare node's agent waits for a scale-up).
    """
    import uvicorn

    from streamops.cluster.profile import ClusterProfile

    layout = settings.layout
    token = registry.load_token(
        layout.agent_token_file if token_file is None else Path(token_file)
    )
    profile = (ClusterProfile.for_config_dir(settings.config_dir) if profile_file is None
               else ClusterProfile.load(Path(profile_file)))
    daemon = SparkNode(node, NodeDaemons(settings, profile))
    supervisor = Supervisor(daemon, layout, RestartPolicy(
        limit=profile.daemon_restart_limit, window=profile.daemon_restart_window))
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    host = settings.local_host if host is None else host
    sock.bind((host, port))
    # listening before it registers: a client that reads the registration while the app
    # still starts up waits in the backlog instead of being refused (uvicorn listens only
    # after its startup hook, which registers)
    sock.listen(128)
    url = advertised_url(host, sock.getsockname()[1], settings.node_host)
    record = registry.AgentRecord(node=node, role=daemon.role, url=url, pid=os.getpid(),
                                  cmd=read_cmdline(os.getpid()))

    def up() -> None:
        registry.register(layout, record)
        log.info("agent of node %s (%s) serving at %s, state root %s", node, daemon.role, url,
                 layout.root)
        supervisor.boot()
        if start_daemon:
            threading.Thread(target=start_own_daemon, name="start-daemon", daemon=True).start()
        supervisor.start()

    def start_own_daemon() -> None:
        try:
            with supervisor.lock:
                before = daemon.pid()
                daemon.start()
                supervisor.done("start", before)
            log.info("agent of node %s: daemon started on boot", node)
        except Exception:  # the agent keeps serving; the operator sees why and can retry
            log.exception("agent of node %s: could not start its daemon on boot", node)

    def down() -> None:
        supervisor.stop()
        registry.unregister(layout, node, os.getpid())
        log.info("agent of node %s stopped", node)

    app = create_app(daemon, ReleaseStore(settings), token, on_startup=up, on_shutdown=down,
                     supervisor=supervisor)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False))
    server.run(sockets=[sock])
