"""The Spark daemons of this machine, one node at a time: what a node agent acts with.

Observe (pid files + the master's JSON) → act (launch, signal) → wait until the master
confirms. Every verb is about one node (``master`` or a worker name) and safe to repeat:
starting a running daemon reports it, stopping a stopped one does nothing. A verb holds a
file lock of its node under ``<state>/cluster/pids`` so two callers cannot start the same
daemon twice. Nothing here knows about agents; :mod:`streamops.agent` serves these verbs
over HTTP and :class:`~streamops.stack.local_cluster.LocalCluster` drives the agents.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TypeVar

from streamops import processes
from streamops.cluster import daemons
from streamops.cluster.client import MasterClient, WorkerInfo
from streamops.cluster.daemons import MASTER_NAME
from streamops.cluster.profile import ClusterProfile
from streamops.cluster.spark_home import SparkInstall, check_spark_install
from streamops.cluster.status import (
    ClusterStatus,
    build_status,
    match_worker,
    tail,
)
from streamops.exceptions import ClusterNotRunning, ProcessError
from streamops.processes import PidRecord
from streamops.settings import Settings
from streamops_contract.names import check_name
from streamops_contract.state.locks import file_lock

log = logging.getLogger(__name__)

T = TypeVar("T")
POLL_INTERVAL = 0.5


def port_is_free(host: str, port: int) -> bool:
    """True if nothing listens on ``host:port`` (bound the way Spark binds, SO_REUSEADDR)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def wait_for(check: Callable[[], T | None], timeout: float, on_timeout: Callable[[], str]) -> T:
    """Poll ``check`` until it returns a value; raise ``ProcessError(on_timeout())`` after."""
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result is not None:
            return result
        if time.monotonic() >= deadline:
            raise ProcessError(on_timeout())
        time.sleep(POLL_INTERVAL)


def _log_excerpt(record: PidRecord) -> str:
    return f"last lines of {record.log}:\n{tail(Path(record.log), 20, record.log_offset)}"


class NodeDaemons:
    """The master and worker daemons of one state root on this machine, node by node."""

    def __init__(
        self,
        settings: Settings,
        profile: ClusterProfile,
        install: SparkInstall | None = None,
        client: MasterClient | None = None,
    ) -> None:
        self.settings = settings
        self.profile = profile
        self.layout = settings.layout
        self.client = client or MasterClient(settings)
        self._spark = install

    # --- observe ---------------------------------------------------------------------
    def install(self) -> SparkInstall:
        if self._spark is None:
            self._spark = check_spark_install()
        return self._spark

    def daemons(self) -> dict[str, PidRecord]:
        """Running daemons by name. Stale pid files are removed and what their dead daemon
        left in its process group is killed."""
        live: dict[str, PidRecord] = {}
        for name in daemons.pid_file_names(self.layout):
            record = daemons.read_pid_file(self.layout, name)
            if record is not None and processes.is_running(record):
                live[name] = record
                continue
            if record is not None:
                log.info("%s (pid %s) is no longer running; removing its pid file", name,
                         record.pid)
                processes.stop_daemons([record], timeout=0)
            daemons.remove_pid_file(self.layout, name)
        return live

    def status(self) -> ClusterStatus:
        records = self.daemons()
        try:
            state = self.client.state()
        except ClusterNotRunning:
            state = None
        return build_status(self.settings, records, state)

    # --- act -------------------------------------------------------------------------
    def _locked(self, node: str) -> AbstractContextManager[None]:
        return file_lock(self.layout.cluster_dir / "pids" / f".{check_name('node', node)}.lock")

    def start_master(self) -> PidRecord:
        """Start the master unless it runs; return once it answers as leader (or recovering)."""
        with self._locked(MASTER_NAME):
            master = self.daemons().get(MASTER_NAME)
            if master is not None:
                log.info("master already running (pid %s) at %s", master.pid,
                         self.settings.master_url)
            else:
                master = self._launch_master(self.install())
            self._wait_master(master)
        return master

    def start_worker(self, name: str) -> PidRecord:
        """Start worker ``name`` unless it runs; return once the master lists it ALIVE."""
        check_name("worker", name)
        if name == MASTER_NAME:
            raise ProcessError("'master' is the master's node name, not a worker name")
        with self._locked(name):
            record = self.daemons().get(name)
            if record is not None:
                log.info("%s already running (pid %s)", name, record.pid)
            else:
                if not self.client.is_alive():
                    raise ClusterNotRunning(
                        f"no master at {self.settings.webui_url}; start the master before "
                        f"{name}"
                    )
                record = self._launch_worker(self.install(), name, self._webui_port(name))
            self._wait_workers([record])
        return record

    def _webui_port(self, name: str) -> int:
        index = daemons.worker_index(name)
        if index is not None or self.profile.worker_webui_port_base == 0:
            return self.profile.worker_webui_port(index) if index else 0
        used = {r.ports.get("webui") for r in self.daemons().values()}
        port = self.profile.worker_webui_port_base
        while port in used or not port_is_free(self.settings.local_host, port):
            port += 1
        return port

    def stop_daemon(self, name: str) -> bool:
        """Stop the daemon of node ``name`` (SIGTERM, then its group); False if none ran.

        A stopped worker is waited for until the master no longer counts it ALIVE, so a
        master stopped next does not keep it in its recovery state.
        """
        with self._locked(name):
            record = self.daemons().get(name)
            if record is None:
                log.info("%s is not running; nothing to stop", name)
                return False
            if record.kind == "worker":
                self._stop_workers([record])
            else:
                processes.stop_daemons([record], self.profile.stop_timeout)
                self._sweep(name)
                daemons.remove_pid_file(self.layout, name)
                log.info("%s stopped", name)
        return True

    def kill_daemon(self, name: str) -> bool:
        """Kill the daemon of node ``name`` and its process group at once (no grace)."""
        with self._locked(name):
            record = self.daemons().get(name)
            if record is None:
                return False
            if record.kind == "worker":
                self._stop_workers([record], kill=True)
            else:
                processes.kill_group(record.pgid)
                self._sweep(name)
                daemons.remove_pid_file(self.layout, name)
                log.info("%s killed", name)
        return True

    def decommission_worker(self, name: str) -> bool:
        """Remove worker ``name`` gracefully: SIGPWR, wait until the master marks it
        DECOMMISSIONED and its executors are gone, then stop it. A worker still running a
        driver is then killed, so the master relaunches the supervised driver elsewhere.
        False if it was not running."""
        with self._locked(name):
            record = self.daemons().get(name)
            if record is None:
                log.info("%s is not running; nothing to decommission", name)
                return False
            if record.kind != "worker":
                raise ProcessError(f"{name} is the master; only workers can be decommissioned")
            drivers = self._decommission(record)
            if drivers:
                log.warning(
                    "%s still runs driver(s) %s; killing it so the master relaunches "
                    "supervised drivers on the other workers (a clean stop would end them "
                    "as KILLED)", name, ", ".join(drivers))
            self._stop_workers([record], kill=bool(drivers))
        return True

    def _launch_master(self, install: SparkInstall) -> PidRecord:
        s = self.settings
        for what, port, env in (("RPC", s.master_port, "STREAMOPS_MASTER_PORT"),
                                ("web UI", s.master_webui_port, "STREAMOPS_MASTER_WEBUI_PORT"),
                                ("REST", s.rest_port, "STREAMOPS_REST_PORT")):
            if not port_is_free(s.master_host, port):
                raise ProcessError(
                    f"cannot start the master: {what} port {s.master_host}:{port} is in use by "
                    f"another program (another cluster?); stop it or set {env}"
                )
        spec = daemons.master_spec(s, self.profile, install)
        # private: the master keeps every submission's description there, and one made by
        # spark-submit's RPC client carries its spark.* properties, the RPC secret among them
        self.layout.recovery_dir.mkdir(parents=True, exist_ok=True)
        self.layout.recovery_dir.chmod(0o700)
        record = processes.launch(spec)
        daemons.write_pid_file(self.layout, record)
        log.info("started master (pid %s) at %s, web UI %s, REST %s; log %s", record.pid,
                 s.master_url, s.webui_url, s.rest_url, record.log)
        return record

    def _launch_worker(self, install: SparkInstall, name: str, webui_port: int) -> PidRecord:
        if webui_port and not port_is_free(self.settings.local_host, webui_port):
            raise ProcessError(
                f"cannot start {name}: web UI port {webui_port} is in use by another program; "
                "free it, change worker_webui_port_base in config/cluster/local.yaml, or set "
                "it to 0 to let Spark pick"
            )
        spec = daemons.worker_spec(self.settings, self.profile, install, name, webui_port)
        self.layout.worker_dir(name).mkdir(parents=True, exist_ok=True)
        record = processes.launch(spec)
        daemons.write_pid_file(self.layout, record)
        log.info("started %s (pid %s, %s cores, %s, web UI port %s); log %s", name, record.pid,
                 self.profile.worker_cores, self.profile.worker_memory, webui_port or "auto",
                 record.log)
        return record

    def _wait_master(self, record: PidRecord) -> None:
        log.info("waiting for the master to answer at %s/json/", self.settings.webui_url)

        def answered() -> str | None:
            if not processes.is_running(record):
                raise ProcessError(f"the master exited during start; {_log_excerpt(record)}")
            try:
                state = self.client.state()
            except ClusterNotRunning:
                return None
            if state.get("url") != self.settings.master_url:
                raise ProcessError(
                    f"{self.settings.webui_url} is the UI of another master "
                    f"({state.get('url')}); set STREAMOPS_MASTER_WEBUI_PORT to a free port"
                )
            status = str(state.get("status"))
            return None if status == "STANDBY" else status  # not leader yet

        status = wait_for(answered, self.profile.start_timeout, lambda: (
            f"the master did not answer at {self.settings.webui_url}/json/ within "
            f"{self.profile.start_timeout:.0f}s; {_log_excerpt(record)}"))
        log.info("master answers at %s (status %s)", self.settings.webui_url, status)

    def _wait_workers(self, records: list[PidRecord]) -> None:
        pending = {r.name: r for r in records}
        if pending:
            log.info("waiting for %s to be ALIVE in the master", ", ".join(pending))

        def registered() -> bool | None:
            for name, record in list(pending.items()):
                if not processes.is_running(record):
                    raise ProcessError(f"{name} exited during start; {_log_excerpt(record)}")
            entries = [WorkerInfo.from_json(w) for w in self.client.state().get("workers", [])]
            for name, record in list(pending.items()):
                entry = match_worker(record, entries)
                if entry is not None and entry.state == "ALIVE":
                    log.info("%s is ALIVE as %s", name, entry.id)
                    del pending[name]
            return True if not pending else None

        wait_for(registered, self.profile.start_timeout, lambda: (
            f"{', '.join(pending)} not ALIVE in the master after "
            f"{self.profile.start_timeout:.0f}s; "
            + "; ".join(_log_excerpt(r) for r in pending.values())))

    def _stop_workers(self, records: list[PidRecord], kill: bool = False) -> None:
        """Stop workers and wait (briefly) until the master no longer counts them ALIVE,
        so a master stopped next does not keep them in its recovery state."""
        ids = self._registered_ids(records)
        if kill:
            for record in records:
                log.info("killing %s (pid %s) and its process group", record.name, record.pid)
                processes.kill_group(record.pgid)
        else:
            processes.stop_daemons(records, self.profile.stop_timeout)
        for record in records:
            self._sweep(record.name)
            daemons.remove_pid_file(self.layout, record.name)
            log.info("%s stopped", record.name)
        if ids:
            try:
                wait_for(lambda: None if self._registered_ids(records, ids) else True,
                         self.profile.stop_timeout,
                         lambda: f"the master still lists {sorted(ids)} after they stopped")
            except ProcessError as exc:
                log.warning("%s; it will drop them after spark.worker.timeout", exc)

    def _sweep(self, name: str) -> None:
        ended = processes.sweep(self.layout.root, name)
        if ended:
            log.info("ended %s process(es) of %s outside its process group (Python workers): "
                     "%s", len(ended), name, ended)

    def _registered_ids(self, records: list[PidRecord], among: set[str] | None = None
                        ) -> set[str]:
        """Ids under which the master lists ``records`` as ALIVE or DECOMMISSIONED."""
        try:
            entries = [WorkerInfo.from_json(w) for w in self.client.state().get("workers", [])]
        except ClusterNotRunning:
            return set()
        if among is not None:
            return {e.id for e in entries if e.id in among and e.state != "DEAD"}
        found = (match_worker(r, entries) for r in records)
        return {e.id for e in found if e is not None and e.state != "DEAD"}

    def _decommission(self, record: PidRecord) -> list[str]:
        """SIGPWR a worker and wait until it is drained; return the drivers it still runs."""
        hint = "retry, or remove it with --force"
        try:
            entry = match_worker(record, self.client.workers())
        except ClusterNotRunning as exc:
            raise ProcessError(f"cannot decommission {record.name}: {exc}; or {hint}") from exc
        if entry is None or entry.state == "DEAD":
            raise ProcessError(f"{record.name} is not registered with the master; {hint}")
        timeout = self.profile.decommission_timeout
        if entry.state != "DECOMMISSIONED":
            log.info("decommissioning %s (%s) with SIGPWR", record.name, entry.id)
            os.kill(record.pid, signal.SIGPWR)

        def decommissioned() -> WorkerInfo | None:
            found = match_worker(record, self.client.workers())
            return found if found is None or found.state != "ALIVE" else None

        wait_for(decommissioned, timeout, lambda: (
            f"{record.name} is still ALIVE {timeout:.0f}s after SIGPWR; {hint}"))
        log.info("%s is DECOMMISSIONED; waiting for its executors to exit", record.name)

        def drained() -> bool | None:
            return None if self.client.worker_state(entry.webuiaddress).get("executors") else True

        wait_for(drained, timeout, lambda: (
            f"{record.name} still runs executors {timeout:.0f}s after decommission; {hint}"))
        return [d.id for d in self.client.active_drivers() if d.worker == entry.id]
