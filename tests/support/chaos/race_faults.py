"""Two hands on the job at once (``two-hands``): a ``streamops restart`` runs; while it holds
the job, a savepoint, an upgrade and a restore typed in other terminals are each refused at
once, naming it; then it is killed with ``kill -9`` part way, and two operators re-run it at
the same moment: exactly one takes the dead holder's lease over and resumes its intent, the
other is refused, naming the one that won. The job must commit again with nothing lost."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from support.chaos.actions import Inflicted
from support.chaos.world import ChaosWorld
from support.integration import wait_until

from streamops.state import op_lease

REFUSED_WITHIN_S = 20.0  # a refusal answers at once; this 2-core machine starts a CLI in ~2 s
BUSY = "is busy"


class OnJob(Protocol):
    """Where a hand types its command: the campaign's world, or the multi-host module's hosts
    and job (``support.chaos.airflow_fault.JobOn``)."""

    @property
    def settings(self) -> Any: ...

    @property
    def registry(self) -> Any: ...

    @property
    def job(self) -> str: ...


@dataclass
class Hand:
    """One terminal's command: its process and, once ended, its exit code and output."""

    what: str
    proc: subprocess.Popen[str]
    started: float
    code: int | None = None
    out: str = ""
    took: float = 0.0

    def end(self, timeout: float) -> Hand:
        self.out, _ = self.proc.communicate(timeout=timeout)
        self.code, self.took = self.proc.returncode, time.time() - self.started
        return self

    def refused_by(self, holder: int | str) -> str:
        """'' if this hand was refused as busy with ``holder`` (a pid, or words of the holder's
        description, e.g. ``DAG run <dag>/<run>``); else what it did."""
        named = f"pid {holder} " if isinstance(holder, int) else holder
        if self.code != 0 and BUSY in self.out and named in self.out:
            return ""
        return (f"{self.what}: exit {self.code} after {self.took:.1f} s, not refused as busy "
                f"with {named.strip()}: {self.out.strip()[-400:]}")  # fmt: skip


def _hand(world: OnJob, what: str, *args: str) -> Hand:
    argv = [sys.executable, "-m", "streamops", "--state-root", str(world.settings.state_root),
            *args]  # fmt: skip
    env = {**os.environ, **world.settings.to_env()}
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)  # fmt: skip
    return Hand(what, proc, time.time())


def restart_hand(world: OnJob) -> Hand:
    """``streamops restart JOB --mode savepoint`` typed in another terminal."""
    return _hand(world, "restart", "restart", world.job, "--mode", "savepoint")


def _holder_pid(world: OnJob) -> int | None:
    current = op_lease.read_operation(world.settings.layout, world.job)
    return current.pid if current is not None and op_lease.holder_alive(current) else None


def _others(world: ChaosWorld) -> list[Hand]:
    """The second hands: each would change the job the restart holds."""
    hands = [_hand(world, "savepoint", "save-snapshot", world.job, f"hand-{int(time.time())}"),
             _hand(world, "upgrade", "upgrade", world.job, str(world.spec_file()))]
    # a savepoint of the job if one was taken, else a name never taken: either way the busy
    # job refuses the restore before it reads any savepoint
    taken = sorted(world.settings.layout.savepoints_dir.glob("*/manifest.json"))
    name = taken[-1].parent.name if taken else "never-taken"
    hands.append(_hand(world, "restore", "restore", str(world.spec_file()), name))
    return hands


def ended(hands: Sequence[Hand], timeout: float = REFUSED_WITHIN_S * 3) -> Sequence[Hand]:
    """Wait for every hand to end, each timed when it ended (not when the others did)."""
    deadline = time.monotonic() + timeout
    running = list(hands)
    while running and time.monotonic() < deadline:
        for hand in [h for h in running if h.proc.poll() is not None]:
            hand.end(5)
            running.remove(hand)
        time.sleep(0.05)
    for hand in running:
        hand.proc.kill()
        hand.end(10)
    return hands


def _all_refused(hands: Sequence[Hand], pid: int) -> list[str]:
    return [p for p in (h.refused_by(pid) for h in ended(hands, REFUSED_WITHIN_S * 3)) if p]


def two_hands(world: ChaosWorld, rng: random.Random) -> Inflicted:
    first = restart_hand(world)
    at = first.started
    wait_until(lambda: _holder_pid(world) == first.proc.pid or first.proc.poll() is not None,
               120, "the restart to hold the job", interval=0.1)  # fmt: skip
    assert first.proc.poll() is None, f"the restart ended before it held the job: {first.end(5)}"
    others = _others(world)
    wrong = _all_refused(others, first.proc.pid)
    assert not wrong, "a second hand was not refused while the restart ran: " + "; ".join(wrong)
    refused = ", ".join(f"{h.what} {h.took:.1f} s" for h in others)
    delay = rng.uniform(0.5, 6.0)  # a restart takes 10-20 s here: killed in its middle
    try:
        first.proc.wait(delay)
        killed = False
    except subprocess.TimeoutExpired:
        first.proc.kill()
        killed = True
    first.end(60)
    # two operators re-run it at the same moment: one takes over, one is refused
    pair = [restart_hand(world), restart_hand(world)]
    wait_until(lambda: _holder_pid(world) in {h.proc.pid for h in pair}
               or all(h.proc.poll() is not None for h in pair), 120,
               "one of the two re-runs to hold the job", interval=0.1)  # fmt: skip
    ended(pair, 600)
    winners = [h for h in pair if h.code == 0]
    assert len(winners) == 1, "two re-runs at once: not exactly one ran: " + " | ".join(
        f"exit {h.code}: {h.out.strip()[-300:]}" for h in pair)
    loser = next(h for h in pair if h is not winners[0])
    problem = loser.refused_by(winners[0].proc.pid)
    assert not problem, f"the other re-run: {problem}"
    how = f"killed -9 after {delay:.1f} s" if killed else f"done within {delay:.1f} s"
    seconds = ", ".join(f"{h.what} {h.took:.1f} s" for h in pair)
    return Inflicted(at, f"restart held the job, its second hands refused ({refused}); {how}; "
                     f"two re-runs at once, one ran, one refused ({seconds})")  # fmt: skip
