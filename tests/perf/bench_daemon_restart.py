"""Benchmark: a Worker JVM killed alone (``kill -9`` of its pid, its host and node agent
alive) until its agent's supervisor has it ALIVE at the master again.

Starts its own local cluster (master + 2 workers of 4 cores, the default shape, each node
with its agent), then ``--rounds`` times kills the Worker JVM of worker-1, worker-2, worker-1,
... (alternating, so no worker reaches its agent's backoff or limit) and measures from the
kill to the pid file naming a new JVM (the restart started) and to the master listing the
worker ALIVE under a new id. ``--pause`` seconds between rounds. Prints each round and the
median and max (goal of issue 49: ALIVE again within 10 s)::

    .venv/bin/python tests/perf/bench_daemon_restart.py
    .venv/bin/python tests/perf/bench_daemon_restart.py --rounds 6 --pause 5
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import statistics
import time

from harness import bench_cluster, discard

from streamops.agent import supervision
from streamops.cluster.client import MasterClient, WorkerInfo
from streamops.stack.local_cluster import LocalCluster

GOAL_S = 10.0
TIMEOUT_S = 120.0


def alive_ids(client: MasterClient) -> set[str]:
    workers = map(WorkerInfo.from_json, client.state().get("workers", []))
    return {w.id for w in workers if w.state == "ALIVE"}


def one_round(cluster: LocalCluster, client: MasterClient, node: str) -> tuple[float, float]:
    """Kill ``node``'s Worker JVM; seconds until a new JVM runs, and until it is ALIVE."""
    old = cluster.daemons()[node]
    before = alive_ids(client)
    t0 = time.monotonic()
    os.kill(old.pid, signal.SIGKILL)
    started = float("nan")
    while time.monotonic() - t0 < TIMEOUT_S:
        record = cluster.daemons().get(node)
        if record is not None and record.pid != old.pid and started != started:  # NaN: unset
            started = time.monotonic() - t0
        if record is not None and record.pid != old.pid and alive_ids(client) - before:
            return started, time.monotonic() - t0
        time.sleep(0.1)
    raise SystemExit(f"{node} not ALIVE again {TIMEOUT_S:.0f} s after its JVM was killed")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--rounds", type=int, default=4, help="kills, alternating between workers")
    ap.add_argument("--pause", type=float, default=5.0, help="seconds between rounds")
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING)
    root, settings, cluster = bench_cluster("bench-daemon-restart-", "3g", workers=2)
    client = MasterClient(settings)
    alive: list[float] = []
    try:
        cluster.start()
        for i in range(args.rounds):
            node = f"worker-{i % 2 + 1}"
            started, ready = one_round(cluster, client, node)
            alive.append(ready)
            print(f"round {i + 1}: {node} JVM killed: new JVM after {started:4.1f} s, ALIVE at "
                  f"the master after {ready:4.1f} s", flush=True)
            time.sleep(args.pause)
        records = supervision.read_all(settings.layout)
        restarts = {n: len(r.restarts) for n, r in records.items() if r.role == "worker"}
        print(f"restarts by the agents' supervisors: {restarts}", flush=True)
        print(f"FIGURE worker JVM killed alone -> ALIVE again: median "
              f"{statistics.median(alive):.1f} s, max {max(alive):.1f} s over {len(alive)} "
              f"kills (goal {GOAL_S:.0f} s)", flush=True)
    finally:
        cluster.stop()
        discard(root)


if __name__ == "__main__":
    main()
