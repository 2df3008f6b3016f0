"""The embedded local Spark standalone cluster: one master and N workers on this machine,
each node driven through its own node agent.

``start`` launches one agent per node (the master, ``worker-1..max_workers``; spare worker
agents stay idle until a scale-up starts their worker), makes the profile's jar release
active if none is, then asks the master's agent and each wanted worker's agent to start
their daemon. ``stop`` asks the agents to stop the workers, then the master, then ends the
agents; nothing started under the state root is left running. Every verb is safe to repeat.
"""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor

from streamops.agent import processes
from streamops.agent.registry import AgentRecord, Agents, node_order
from streamops.cluster import daemons
from streamops.cluster.client import MasterClient
from streamops.cluster.daemons import MASTER_NAME
from streamops.cluster.node import NodeDaemons, port_is_free, wait_for
from streamops.cluster.profile import ClusterProfile
from streamops.cluster.releases import ReleaseStore
from streamops.cluster.spark_home import SparkInstall
from streamops.cluster.status import ClusterStatus, worker_sort_key
from streamops.exceptions import AgentError, ClusterNotRunning, ProcessError
from streamops.processes import PidRecord, sweep
from streamops.settings import Settings
from streamops.state.cluster_size import forget_desired_workers
from streamops.state.layout import write_json_atomic
from streamops_contract.names import check_name

log = logging.getLogger(__name__)

__all__ = ["LocalCluster", "port_is_free", "wait_for"]


class LocalCluster:
    """Start, stop, scale and inspect the local cluster of one state root (via its agents)."""

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
        self.node_daemons = NodeDaemons(settings, profile, install, self.client)
        self.agents = Agents(settings, timeout=profile.start_timeout
                             + profile.decommission_timeout + 60)

    # --- observe ---------------------------------------------------------------------
    def install(self) -> SparkInstall:
        return self.node_daemons.install()

    def daemons(self) -> dict[str, PidRecord]:
        """Running daemons by name (from their pid files)."""
        return self.node_daemons.daemons()

    def status(self) -> ClusterStatus:
        return self.node_daemons.status()

    def nodes(self, workers: int | None = None) -> list[str]:
        """The master and every worker node that gets an agent."""
        count = max(self.profile.max_workers, self.profile.workers, workers or 0)
        return [MASTER_NAME, *(daemons.worker_name(i) for i in range(1, count + 1))]

    # --- agents ----------------------------------------------------------------------
    def start_agents(self, nodes: list[str]) -> dict[str, AgentRecord]:
        """Start the agent of each node unless it runs (in parallel), sized by this
        cluster's profile (``<state>/cluster/profile.json``)."""
        write_json_atomic(self.layout.agent_profile_file, self.profile.model_dump(mode="json"))
        with ThreadPoolExecutor(max_workers=4) as pool:
            started = list(pool.map(
                lambda n: processes.start_agent(self.settings, n),
                nodes))
        return {r.node: r for r in started}

    def stop_agents(self) -> list[str]:
        found = self.agents.records()
        for record in found.values():
            processes.stop_agent(self.settings, record)
        return sorted(found, key=node_order)

    def _activate_default_release(self) -> None:
        wanted = self.profile.jar_release
        store = ReleaseStore(self.settings)
        if not wanted or store.active() is not None:
            return
        try:
            self.agents.master().switch_release(MASTER_NAME, wanted)
        except AgentError as exc:
            if exc.status != 404:
                raise
            log.warning("no jar release is active and %s", exc)

    # --- act -------------------------------------------------------------------------
    def start(self, workers: int | None = None) -> ClusterStatus:
        """Start the agents, the master and ``worker-1..N`` (default: the profile's
        ``workers``) unless they run; return once each is ALIVE in the master."""
        count = self.profile.workers if workers is None else workers
        if count < 0:
            raise ProcessError(f"cannot start {count} workers; give 0 or more")
        self.install()
        self.start_agents(self.nodes(count))
        self._activate_default_release()
        self.agents.master().start(MASTER_NAME)
        wanted = [daemons.worker_name(i) for i in range(1, count + 1)]
        with ThreadPoolExecutor(max_workers=max(1, len(wanted))) as pool:
            list(pool.map(lambda n: self.agents.client(n).start(n), wanted))
        status = self.status()
        log.info("cluster up: master %s, %s alive worker(s), jar release %s",
                 status.master_url, len(status.alive_workers),
                 ReleaseStore(self.settings).active() or "none")
        return status

    def stop(self) -> list[str]:
        """Stop the workers, then the master (through their agents), then the agents."""
        live = self.daemons()
        workers = sorted((n for n, r in live.items() if r.kind == "worker"), key=worker_sort_key)
        if workers:
            log.info("stopping %s worker(s): %s", len(workers), ", ".join(workers))
        for name in [*workers, *([MASTER_NAME] if MASTER_NAME in live else [])]:
            self._stop_node(name)
        agents = self.stop_agents()
        if agents:
            log.info("stopped %s agent(s): %s", len(agents), ", ".join(agents))
        forget_desired_workers(self.layout)  # a fresh start runs (and expects) the profile's
        strays = sweep(self.layout.root)
        if strays:
            log.warning("ended %s stray process(es) of this cluster: %s", len(strays), strays)
        if not live:
            log.info("no daemon of the cluster at %s is running", self.layout.root)
        return sorted(live, key=worker_sort_key)

    def _stop_node(self, name: str) -> None:
        try:
            self.agents.client(name).stop(name)
        except AgentError as exc:
            log.warning("the agent of %s cannot stop it (%s); stopping it directly", name, exc)
            self.node_daemons.stop_daemon(name)

    def add_worker(self, name: str | None = None) -> str:
        """Start one more worker (next free ``worker-<i>`` unless named); return its name.

        A node without an agent gets one first (the embedded default runs every agent)."""
        if MASTER_NAME not in self.daemons() and not self.client.is_alive():
            raise ClusterNotRunning(
                f"no master at {self.settings.webui_url}; run `streamops cluster start` "
                "before adding workers"
            )
        live = self.daemons()
        if name is None:
            index = 1
            while daemons.worker_name(index) in live:
                index += 1
            name = daemons.worker_name(index)
        check_name("worker", name)
        if name == MASTER_NAME or name in live:
            raise ProcessError(f"{name} is already running; pick another name or omit it")
        self.start_agents([name])
        self.agents.client(name).start(name)
        return name

    def remove_worker(self, name: str, graceful: bool = True) -> None:
        """Remove one worker through its agent: graceful decommission (SIGPWR, drain, stop),
        or with ``graceful=False`` kill it and its process group at once."""
        live = self.daemons()
        record = live.get(name)
        if record is None or record.kind != "worker":
            running = ", ".join(sorted((n for n, r in live.items() if r.kind == "worker"),
                                       key=worker_sort_key))
            raise ProcessError(
                f"no running worker named {name!r} (running: {running or 'none'}); "
                "see `streamops cluster status`"
            )
        agent = self.agents.client(name)
        if graceful:
            agent.decommission(name)
        else:
            agent.kill(name)
