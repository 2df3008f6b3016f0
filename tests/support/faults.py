"""Faults the integration tests inflict on the session's cluster, and how recovery is seen."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time

from support.integration import ClusterHandle

from streamops.agent.processes import kill_agent


def driver_jvm_pid(driver_id: str) -> int:
    """The pid of the JVM (``DriverWrapper``) that runs ``driver_id`` on its worker."""
    ps = subprocess.run(["ps", "-ww", "-eo", "pid,args"], capture_output=True, text=True).stdout
    return next(int(line.split()[0]) for line in ps.splitlines()
                if "DriverWrapper" in line and driver_id in line)  # fmt: skip


def node_of(cluster: ClusterHandle, driver_id: str) -> str:
    """The name of the worker that runs ``driver_id`` (a worker leads its process group)."""
    group = os.getpgid(driver_jvm_pid(driver_id))
    return next(n for n, r in cluster.cluster.daemons().items() if r.pgid == group)


def kill_node_of(cluster: ClusterHandle, driver_id: str) -> tuple[float, str]:
    """A lost host: kill -9 of the node agent, then of the process group of the worker that
    runs ``driver_id`` (a worker leads its group: its drivers and executors die with it);
    when, and the worker's name. ``add_worker(name)`` starts agent and worker again."""
    name = node_of(cluster, driver_id)
    group = cluster.cluster.daemons()[name].pgid
    kill_agent(cluster.settings, name)  # else it would start its worker again
    killed_at = time.time()
    os.killpg(group, signal.SIGKILL)
    return killed_at, name


def next_batches(cluster: ClusterHandle, job: str, after: float, stages: set[str]) -> float | None:
    """Seconds from ``after`` until every stage committed a batch, or None while one has not."""
    found: dict[str, float] = {}
    history = cluster.settings.layout.status_history(job)
    for line in history.read_text().splitlines():
        rec = json.loads(line)
        if float(rec.get("last_batch_at") or 0) > after:
            found.setdefault(rec["stage"], float(rec["last_batch_at"]))
    return max(found[s] for s in stages) - after if stages <= set(found) else None


def kill_pid(pid: int) -> None:
    """``kill -9`` of ``pid``; one already gone is fine."""
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def kill_and_restart_master(cluster: ClusterHandle, down: float) -> float:
    """``kill -9`` of the master's host (its agent, then the master), started again ``down``
    seconds later (FILESYSTEM recovery); when the master was killed."""
    from streamops.cluster.daemons import MASTER_NAME

    kill_agent(cluster.settings, MASTER_NAME)  # else it would start the master again
    at = time.time()
    kill_pid(cluster.cluster.daemons()[MASTER_NAME].pid)
    time.sleep(down)
    cluster.cluster.start()
    return at
