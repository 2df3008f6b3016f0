"""Faults in the middle of a procedure: while a warm cluster restart hands the job over, the
node of the driver asked for the handover's savepoint is killed (``node-mid-handover``), or
the master is (``master-mid-handover``, started again a few seconds later)."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable

from support.chaos.actions import Inflicted
from support.chaos.world import ChaosWorld
from support.faults import kill_and_restart_master, kill_node_of
from support.integration import wait_until

from streamops.cluster.releases import ReleaseStore
from streamops.procedures import cluster_restart as procedure
from streamops.procedures import upgrade_steps

Back = Callable[[], None]  # what the fault takes back once the job commits again
Fault = Callable[[ChaosWorld, str, random.Random], tuple[float, str, Back]]


def _node(world: ChaosWorld, driver: str, rng: random.Random) -> tuple[float, str, Back]:
    """kill -9 of the node of ``driver`` (or, if it handed over and ended already, of the new
    driver's); the node comes back once the job commits again."""
    try:
        at, worker = kill_node_of(world.cluster, driver)
        whose = f"driver {driver}"
    except StopIteration:
        target = str(world.registry.view(world.job).driver_id)
        at, worker = kill_node_of(world.cluster, target)
        whose = f"the new driver {target}; {driver} had handed over"
    return at, f"killed {worker} ({whose})", lambda: world.cluster.cluster.add_worker(worker)


def _master(world: ChaosWorld, driver: str, rng: random.Random) -> tuple[float, str, Back]:
    """kill -9 of the master, started again 3-10 s later (FILESYSTEM recovery)."""
    down = rng.uniform(3, 10)
    at = kill_and_restart_master(world.cluster, down)
    return at, f"killed the master (down {down:.0f} s)", lambda: None


def _mid_handover(world: ChaosWorld, rng: random.Random, fault: Fault) -> Inflicted:
    """Run a warm cluster restart in a thread; when the handover's savepoint request is
    recorded (at once, or 0.5-4 s later: the old driver may have answered and idle until its
    successor runs), inflict ``fault``. The restart either rides it out or fails loudly and
    rolls back; either way the job must commit again, nothing lost."""
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
    at, what, back = fault(world, driver, rng)
    thread.join(1200)
    assert not thread.is_alive(), "the cluster restart still runs after 20 min"
    restart = procedure.load_intent(world.settings)
    phase = restart.phase if restart else "none"
    assert phase in ("done", "rolled-back"), (
        f"the cluster restart ended at phase {phase}: {outcome[0]}")
    return Inflicted(at, f"{what} {delay:.1f} s after the handover's savepoint request; the "
                     f"restart to {other} {outcome[0]} (phase {phase})",
                     then=lambda: _as_found(world, back, found))  # fmt: skip


def _as_found(world: ChaosWorld, back: Back, release: str) -> None:
    """What the fault took back, and the release the step found (a restart that rode the
    fault out switched it): the session's cluster is left as the step found it."""
    back()
    if ReleaseStore(world.settings).active() != release:
        procedure.restart(world.settings, release, path="warm")


def node_mid_handover(world: ChaosWorld, rng: random.Random) -> Inflicted:
    return _mid_handover(world, rng, _node)


def master_mid_handover(world: ChaosWorld, rng: random.Random) -> Inflicted:
    return _mid_handover(world, rng, _master)
