"""The cluster's nodes, through their agents: the workers running, adding and removing one
(graceful decommission), scaling to a count, stopping and starting the whole cluster and
switching its jar release. The rolling scale (:mod:`streamops.procedures.scale`) and the
cluster restart (:mod:`streamops.procedures.cluster_restart`) act on the cluster only through
the ``nodes`` of the operations port, :class:`AgentNodes`, which runs these.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from streamops.agent.registry import Agents
from streamops.cluster.client import MasterClient, WorkerInfo
from streamops.cluster.daemons import MASTER_NAME, worker_index
from streamops.cluster.node import wait_for
from streamops.cluster.releases import ReleaseStore
from streamops.exceptions import AgentError, ClusterError, ClusterRestartFailed, ConfigError
from streamops.settings import Settings
from streamops.timeouts import MASTER_TIMEOUT
from streamops.world.operations import ScaleResult

log = logging.getLogger("streamops.procedures.scale")


def running_workers(agents: Agents) -> list[str]:
    """Worker nodes whose agent reports a running daemon, in worker order."""
    return [n for n in agents.workers() if agents.client(n).node(n).running]


def alive_in_master(settings: Settings) -> list[WorkerInfo]:
    return [w for w in MasterClient(settings).workers() if w.state == "ALIVE"]


def wait_alive_count(settings: Settings, count: int, timeout: float = MASTER_TIMEOUT) -> None:
    """Wait until the master lists exactly ``count`` ALIVE workers."""
    log.info("waiting for the master to list %s ALIVE worker(s)", count)
    wait_for(lambda: True if len(alive_in_master(settings)) == count else None, timeout,
             lambda: f"the master lists {len(alive_in_master(settings))} ALIVE workers, not "
                     f"{count}, after {timeout:.0f}s")
    log.info("the master lists %s ALIVE worker(s)", count)


def add_worker(settings: Settings, name: str) -> ScaleResult:
    """Start worker ``name`` through its agent and wait until the master lists it ALIVE."""
    agents = Agents(settings)
    before = running_workers(agents)
    if name in before:
        log.info("%s is already running; nothing to add", name)
        return ScaleResult((), (), tuple(before))
    log.info("adding worker %s through its agent", name)
    agents.client(name).start(name)
    wait_alive_count(settings, len(before) + 1)
    return ScaleResult((name,), (), tuple(running_workers(agents)))


def remove_worker(settings: Settings, name: str) -> ScaleResult:
    """Decommission worker ``name`` gracefully through its agent; wait until it is gone."""
    agents = Agents(settings)
    before = running_workers(agents)
    if name not in before:
        raise ClusterError(f"worker {name} is not running (running: "
                           f"{', '.join(before) or 'none'}); nothing to remove")
    if len(before) == 1:
        raise ClusterError(f"{name} is the last running worker; the jobs need one, keep it")
    log.info("removing worker %s by graceful decommission through its agent", name)
    agents.client(name).decommission(name)
    wait_alive_count(settings, len(before) - 1)
    return ScaleResult((), (name,), tuple(running_workers(agents)))


def _removal_order(settings: Settings, agents: Agents, running: list[str]) -> list[str]:
    """Workers to remove first: those running no driver, then the highest index."""
    drivers_on = {d.worker for d in MasterClient(settings).active_drivers()}

    def runs_driver(name: str) -> bool:
        return agents.client(name).node(name).worker_id in drivers_on

    return sorted(running, key=lambda n: (runs_driver(n), -(worker_index(n) or 0)))


def scale_to(settings: Settings, workers: int) -> ScaleResult:
    """Start idle worker agents' workers, or decommission workers, until ``workers`` run."""
    if workers < 1:
        raise ConfigError(f"invalid worker count {workers}: give 1 or more")
    agents = Agents(settings)
    running = running_workers(agents)
    log.info("scaling from %s to %s worker(s) (running: %s)", len(running), workers,
             ", ".join(running) or "none")
    started: list[str] = []
    removed: list[str] = []
    if workers > len(running):
        idle = [n for n in agents.workers() if n not in running]
        if len(idle) < workers - len(running):
            raise ClusterError(
                f"cannot scale to {workers} workers: only {len(running) + len(idle)} worker "
                f"nodes have an agent ({', '.join(agents.workers())}); start more agents "
                "(profile max_workers) first")
        for name in idle[: workers - len(running)]:
            started += add_worker(settings, name).started
    else:
        for name in _removal_order(settings, agents, running)[: len(running) - workers]:
            removed += remove_worker(settings, name).removed
    result = ScaleResult(tuple(started), tuple(removed), tuple(running_workers(agents)))
    log.info("scale done: %s", result.summary())
    return result


def switch_release_on_nodes(agents: Agents, release: str) -> None:
    """Switch the active jar release on every node that has an agent."""
    ReleaseStore(agents.settings).path(release)  # UnknownRelease naming the known ones
    nodes = list(agents.records())
    if not nodes:
        raise ClusterRestartFailed("no node agent is registered; start the cluster first")
    switched, lost = [], []
    for node in nodes:
        try:
            agents.client(node).switch_release(node, release)
            switched.append(node)
        except AgentError as exc:
            if node == MASTER_NAME or exc.status != 0:  # refused: not a lost host
                raise
            # a worker's host lost with its agent (the release lives in the shared state
            # root: the node takes the active one when it is started again)
            log.warning("jar release %s: %s's agent cannot be reached (%s); the node takes "
                        "the active release when it is started again", release, node, exc)
            lost.append(node)
    if not switched:
        raise ClusterRestartFailed(f"jar release {release}: no node agent could be reached "
                                   f"({', '.join(lost)})")  # fmt: skip
    log.info("jar release %s active on %s", release, ", ".join(switched))


@dataclass
class AgentNodes:
    """The whole cluster through its agents (the ``nodes`` of the operations port,
    :class:`~streamops.world.operations.Nodes`): each operation runs this module's function."""

    settings: Settings

    @property
    def agents(self) -> Agents:
        return Agents(self.settings)

    def running_workers(self) -> list[str]:
        return running_workers(self.agents)

    def add_worker(self, name: str) -> ScaleResult:
        return add_worker(self.settings, name)

    def remove_worker(self, name: str) -> ScaleResult:
        return remove_worker(self.settings, name)

    def scale_to(self, workers: int) -> ScaleResult:
        return scale_to(self.settings, workers)

    def wait_alive_count(self, count: int, timeout: float = MASTER_TIMEOUT) -> None:
        wait_alive_count(self.settings, count, timeout)

    def stop_all(self) -> None:
        """Stop every running worker, then the master."""
        agents = self.agents
        for node in reversed(running_workers(agents)):
            agents.client(node).stop(node)
        agents.master().stop(MASTER_NAME)

    def start_all(self, workers: list[str]) -> None:
        """Start the master, then ``workers``; wait until the master leaves recovery."""
        agents = self.agents
        agents.master().start(MASTER_NAME)
        for node in workers:
            agents.client(node).start(node)
        client = MasterClient(self.settings)
        log.info("waiting for the master to leave recovery (submissions need status ALIVE)")
        wait_for(lambda: True if client.state().get("status") == "ALIVE" else None,
                 MASTER_TIMEOUT, lambda: f"the master is still {client.state().get('status')} "
                 f"{MASTER_TIMEOUT:.0f}s after start")  # fmt: skip

    def switch_release(self, release: str) -> None:
        switch_release_on_nodes(self.agents, release)
