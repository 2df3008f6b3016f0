"""A fault in the middle of a procedure: the job's node killed while a warm cluster restart
hands the job over (the chaos action ``node-mid-handover``)."""

from __future__ import annotations

import random
import threading
import time

from support.chaos.actions import Inflicted
from support.chaos.world import ChaosWorld
from support.faults import kill_node_of
from support.integration import wait_until

from streamops.cluster.releases import ReleaseStore
from streamops.procedures import cluster_restart as procedure
from streamops.procedures import upgrade_steps


def node_mid_handover(world: ChaosWorld, rng: random.Random) -> Inflicted:
    """kill -9 of the job's node while a warm cluster restart hands the job over: when the
    handover's savepoint request is recorded (at once, or 0.5-4 s later: the old driver may
    have answered and idle until its successor runs), the node of the driver asked. The
    restart either rides it out or fails loudly and rolls back; either way the job must
    commit again, nothing lost."""
    found = ReleaseStore(world.settings).active()
    other = "r2" if found == "r1" else "r1"
    driver = str(world.registry.view(world.job).driver_id)
    outcome: list[str] = []

    def run() -> None:
        try:
            procedure.restart(world.settings, other, path="warm")
            outcome.append("finished")
        except Exception as exc:  # noqa: BLE001 - reported in the step's note
            outcome.append(f"failed loudly: {type(exc).__name__}: {exc}"[:600])

    thread = threading.Thread(target=run, name="chaos-cluster-restart", daemon=True)
    thread.start()

    def requested() -> bool:
        intent = upgrade_steps.load_intent(world.settings, world.job)
        return bool(intent and intent.request and intent.old_driver == driver)

    wait_until(lambda: requested() or not thread.is_alive(), 300,
               "the handover's savepoint request", interval=0.05)  # fmt: skip
    assert thread.is_alive(), f"the restart ended before its handover: {outcome}"
    delay = rng.choice((0.0, rng.uniform(0.5, 4.0)))  # before the answer, or in the handover
    time.sleep(delay)
    try:
        at, worker = kill_node_of(world.cluster, driver)
        whose = f"driver {driver}"
    except StopIteration:  # it handed over and ended already: the new driver's node then
        target = str(world.registry.view(world.job).driver_id)
        at, worker = kill_node_of(world.cluster, target)
        whose = f"the new driver {target}; {driver} had handed over"
    thread.join(1200)
    assert not thread.is_alive(), "the cluster restart still runs after 20 min"
    restart = procedure.load_intent(world.settings)
    phase = restart.phase if restart else "none"
    assert phase in ("done", "rolled-back"), (
        f"the cluster restart ended at phase {phase}: {outcome[0]}")
    return Inflicted(at, f"killed {worker} ({whose}) {delay:.1f} s after the "
                     f"handover's savepoint request; the restart to {other} {outcome[0]} "
                     f"(phase {phase})",
                     then=lambda: _as_found(world, worker, found))


def _as_found(world: ChaosWorld, worker: str, release: str) -> None:
    """The killed node back, and the release the step found (a restart that rode the fault
    out switched it): the session's cluster is left as the step found it."""
    world.cluster.cluster.add_worker(worker)
    if ReleaseStore(world.settings).active() != release:
        procedure.restart(world.settings, release, path="warm")
