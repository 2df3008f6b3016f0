"""The pure parts of a chaos campaign's judgement, apart from any cluster (unit-tested in
``tests/unit/suite/test_chaos_judge.py``):

- which action a step runs when the drawn one's precondition does not hold (drawn again, a
  bounded number of times; a step never passes without running);
- the plan of the test command's campaign: every short kind once, then the seeded draw;
- whether the time until every stage committed again is within the bound the kind declares;
- when every stage of every job of the world committed again;
- whether health came back to OK within :data:`HEALTH_OK_S` after the step, having judged
  every job of the world;
- the oracle's counts per step, duplicates apart from unexpected keys.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from support.chaos.actions import Action
from support.oracle import Comparison

if TYPE_CHECKING:
    from support.chaos.world import ChaosWorld

MAX_REDRAWS = 3
"""A drawn action whose precondition fails is replaced by another drawn one this many times
at most; then the step fails."""
HEALTH_OK_S = 90.0
"""After a step (every stage committing again), health must say OK within this long (a node
step measured 60.0 s; the step's line says what a return later than 10 s waited for)."""


def choose(drawn: Action, pool: Sequence[Action], holds: Callable[[Action], bool],
           rng: random.Random, *, redraw: bool) -> tuple[Action | None, list[str]]:  # fmt: skip
    """The action a step runs: ``drawn`` if its precondition holds, else (with ``redraw``)
    another of ``pool`` drawn by ``rng`` whose precondition holds, at most
    :data:`MAX_REDRAWS` tries; None when none held. Also the names whose precondition failed."""
    failed: list[str] = []
    candidate = drawn
    for _ in range(1 + (MAX_REDRAWS if redraw else 0)):
        if holds(candidate):
            return candidate, failed
        failed.append(candidate.name)
        others = [a for a in pool if a.name not in failed]
        if not others:
            break
        candidate = rng.choice(others)
    return None, failed


def covering_plan(catalogue: Sequence[Action], seed: int, drawn: int,
                  world: ChaosWorld | None = None) -> list[str]:  # fmt: skip
    """The test command's campaign: every short kind (whose world exists, given ``world``)
    once in the seed's order, then ``drawn`` more drawn by the seed among them."""
    short = [a.name for a in catalogue if a.short and (world is None or a.exists(world))]
    rng = random.Random(seed)
    first = short[:]
    rng.shuffle(first)
    return first + [rng.choice(short) for _ in range(drawn)]


def recovery_problem(action: Action, recovery_s: float, bound: float | None = None) -> str:
    """'' when every stage committed again within the bound ``action`` declares (or
    ``bound``, the step's own when its fault hit another kind's case)."""
    limit = action.recover_s if bound is None else bound
    if recovery_s <= limit:
        return ""
    return (f"every stage committed again {recovery_s:.1f} s after {action.name}, over its "
            f"bound of {limit:.0f} s")  # fmt: skip


def every_job_again(found: Mapping[str, float | None]) -> float | None:
    """Seconds until every stage of every job committed again (``found``: per job, the
    seconds until each of its stages did, None while one has not); None while one has not."""
    if not found or any(seconds is None for seconds in found.values()):
        return None
    return max(s for s in found.values() if s is not None)


class Result(Protocol):
    """One result of a health report (``streamops.health.report.CheckResult``)."""

    group: str
    name: str
    message: str

    @property
    def level(self) -> Any: ...


RESTARTED_BY_AGENT = ("cluster", "daemons")
"""The check that warns, for its restart window (10 minutes by default), that an agent
restarted its daemon: after a step, OK again once every supervised daemon runs."""


def health_after_step(results: Sequence[Result], jobs: Iterable[str],
                      daemons_running: bool) -> tuple[str, str]:  # fmt: skip
    """Health's verdict after a step, from its report's ``results``: ``ok`` when every result
    is OK and every job of ``jobs`` was judged; else the level and what was not OK. A warning
    of :data:`RESTARTED_BY_AGENT` counts as OK when ``daemons_running`` (a restart the step
    caused, told on by design, and done); a job not judged fails."""
    failing = [r for r in results if _level(r) != "ok"
               and not (daemons_running and _level(r) == "warn"
                        and (r.group, r.name) == RESTARTED_BY_AGENT)]  # fmt: skip
    judged = {r.name for r in results if r.group == "jobs"}
    unjudged = [job for job in jobs if job not in judged]
    messages = [f"{r.group}/{r.name}: {r.message}" for r in failing][:3]
    messages += [f"jobs/{job}: not judged by health" for job in unjudged]
    if unjudged or any(_level(r) == "fail" for r in failing):
        return "fail", "; ".join(messages)
    return ("warn" if failing else "ok"), "; ".join(messages)


def _level(result: Result) -> str:
    return str(getattr(result.level, "value", result.level))


def wait_health_ok(
    level_and_message: Callable[[], tuple[str, str]],
    bound: float = HEALTH_OK_S,
    every: float = 1.0,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    seen: list[str] | None = None,
) -> tuple[float | None, str]:
    """Ask health until it says ``ok``: the seconds it took, or None and what health said
    last when it did not within ``bound``. ``seen`` gets each different verdict that was not
    OK, in order (what a slow return to OK was waiting for)."""
    t0, last = clock(), None
    while True:
        level, message = level_and_message()
        if level == "ok":
            return clock() - t0, ""
        if seen is not None and (level, message) != last:
            seen.append(f"{level} at {clock() - t0:.0f} s: {message}")
        last = (level, message)
        if clock() - t0 >= bound:
            return None, f"health not OK {bound:.0f} s after the step: {level}: {message}"
        sleep(every)


@dataclass
class Tally:
    """The oracle's counts of one step: keys missing, keys the sink should not hold
    (unexpected), windows that counted a record more than once (duplicated), and rows
    otherwise different."""

    missing: int = 0
    unexpected: int = 0
    duplicated: int = 0
    different: int = 0

    def add(self, other: Tally) -> Tally:
        return Tally(
            self.missing + other.missing,
            self.unexpected + other.unexpected,
            self.duplicated + other.duplicated,
            self.different + other.different,
        )


def tally(comparisons: Sequence[Comparison]) -> Tally:
    out = Tally()
    for c in comparisons:
        dup = sum(1 for _key, expected, row in c.different if _counted_twice(expected, row))
        out = out.add(Tally(len(c.missing), len(c.unexpected), dup, len(c.different) - dup))
    return out


def _counted_twice(expected: object, row: object) -> bool:
    """A window row holding more pings than the window had: a record counted twice."""
    pings = getattr(expected, "pings", None)
    if pings is None or not isinstance(row, dict) or "pings" not in row:
        return False
    return int(row["pings"]) > int(pings)


def loss_problems(sequences: Sequence[int], read_until: dict[str, int],
                  recorded: Sequence[dict[str, Any]]) -> list[str]:  # fmt: skip
    """An accepted loss, recomputed: per stage, the records of the lost history's journal
    (``sequences``) after what the stage had read (``read_until``, from its checkpoint) must
    be what the product recorded it skipped (``recorded``: the source's ``losses`` for that
    stream, ``committed`` the sequence it had read up to). Empty when they agree."""
    problems = []
    committed = sorted({int(r.get("committed", -1)) for r in recorded})
    if not recorded:
        problems.append("the product recorded no loss of the lost stream")
    elif committed != sorted(set(read_until.values())):
        problems.append(f"the product recorded losses after sequences {committed}; the stages' "
                        f"checkpoints had read up to {read_until}")  # fmt: skip
    for stage, until in read_until.items():
        journal = sum(1 for s in sequences if s > until)
        counted = max(0, max(sequences, default=0) - until)
        if journal != counted:
            problems.append(f"{stage}: the journal holds {journal} records after sequence "
                            f"{until}, the loss counted {counted}")  # fmt: skip
    return problems
