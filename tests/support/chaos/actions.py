"""What a chaos step is: an :class:`Action` of the catalogue, and what it :class:`Inflicted`."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field

from support.chaos.world import ChaosWorld


@dataclass
class Inflicted:
    """What an action did: when its fault hit (the recovery is measured from there), a note
    for the report, what to do once the job commits again, and whether the job is expected
    to be down until an operator acts (the action then acts itself before returning)."""

    at: float
    note: str = ""
    then: Callable[[], None] | None = None
    recover_s: float | None = None
    """The step's bound when what the fault hit is another kind's case (the node of the
    fleet driver that held the transactions driver too: ``both-drivers-node``'s bound);
    None: the action's."""


@dataclass(frozen=True)
class Action:
    name: str
    kind: str  # "fault" or "procedure"
    run: Callable[[ChaosWorld, random.Random], Inflicted]
    short: bool = True  # drawn by the short campaign too
    needs: Callable[[ChaosWorld], bool] = field(default=lambda world: True)
    recover_s: float = 30.0
    """Every stage must commit again within this long of the fault (or the procedure's
    start): the kind's goal, with the margin this 2-core machine needs."""
    exists: Callable[[ChaosWorld], bool] = field(default=lambda world: True)
    """Whether the world has what the action acts on at all (a PostgreSQL store, a hot
    standby, three workers): an action whose world does not exist is never drawn, while
    ``needs`` is its precondition of the moment (redrawn, or failing the step)."""
