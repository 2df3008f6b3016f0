"""A seeded chaos campaign: actions drawn from the catalogue, one after another on the
world's two jobs (fleet-pings, the one the actions act on, and the transactions journal job
beside it) while every source flows, and after each step three judgements:

- the time until every stage of both jobs commits a batch again, within the bound the action's
  kind declares (``Action.recover_s``; printed per step), and the longest time without any
  committed batch of a job from the fault to then (a procedure's gap); then health back to
  OK within :data:`~support.chaos.judge.HEALTH_OK_S`, having judged both jobs;
- health's verdicts, sampled every couple of seconds through the step: never OK while a
  job has no live driver, or while a stage of a job has not committed for longer than
  :data:`STALLED_S` outside the oracle's hold;
- the oracles: every fleet sink equal to its recomputation over the records its stage was
  given, and every journal entry written in ``transaction_log`` exactly once (0 lost,
  0 duplicated, 0 different; an accepted loss is counted, per stage, apart).

A drawn action whose precondition does not hold is drawn again (a bounded number of times,
:func:`~support.chaos.judge.choose`); an action named in ``only`` whose precondition does
not hold fails its step. No step passes without having run. A failure names the seed and
the step; the same seed draws the same actions.
"""

from __future__ import annotations

import json
import random
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from support.chaos.catalogue import BY_NAME, CATALOGUE, Action
from support.chaos.judge import (
    Tally,
    choose,
    every_job_again,
    health_after_step,
    recovery_problem,
    tally,
    wait_health_ok,
)
from support.chaos.world import ChaosWorld
from support.faults import next_batches
from support.gaps import processing_gap
from support.integration import wait_until

from streamops.exceptions import StreamopsError
from streamops.health.checks import run_checks
from streamops.health.daemons import gather_daemons
from streamops.health.report import Level, Thresholds
from streamops.job_reads import view_of

STALLED_S = 60.0
"""A stage without a commit for this long is stalled (health must not be OK then)."""
THRESHOLDS = Thresholds(max_batch_age=45.0)
AFTER_STEP = Thresholds(max_batch_age=45.0, recent_loss_window=1.0)
"""Health's thresholds for "OK again" after a step: a loss the step accepted or a late file
it caused is reported OK with its count (it warns for an hour by default, by design), so what
must be OK again is the job, its stages, its sources and the cluster."""
PRECONDITION_WAIT_S = 30.0
"""A named step waits this long for its precondition (a node given back by the previous step
registering again) before it fails."""
SLOW_HEALTH_S = 10.0
"""Health back to OK later than this after a step: the step's line says what it waited for."""


def draw(seed: int, steps: int, short: bool, world: ChaosWorld | None = None) -> list[Action]:
    """The actions of a campaign: a shuffled round of every kind (of the short ones for a
    short campaign; of those whose world exists, given ``world``), then the next round, so a
    campaign of N steps covers min(N, kinds)."""
    rng = random.Random(seed)
    pool = pool_of(short, world)
    out: list[Action] = []
    while len(out) < steps:
        round_ = pool[:]
        rng.shuffle(round_)
        out += round_
    return out[:steps]


def pool_of(short: bool, world: ChaosWorld | None) -> list[Action]:
    return [a for a in CATALOGUE if (a.short or not short)
            and (world is None or a.exists(world))]  # fmt: skip


@dataclass
class Sample:
    at: float
    level: str
    live: bool
    stalled: bool
    held: bool
    message: str


@dataclass
class StepReport:
    number: int
    action: str
    kind: str
    note: str = ""
    recovery_s: float | None = None
    gap_s: float | None = None
    catch_up_s: float | None = None
    oracle: list[str] = field(default_factory=list)
    oracle_ok: bool = False
    verdicts_down: dict[str, int] = field(default_factory=dict)
    violations: list[str] = field(default_factory=list)
    error: str = ""
    bound_s: float | None = None
    health_ok_s: float | None = None
    took_s: float | None = None
    """The step's wall time: its action, the waits, the catch-up and the comparison."""
    tally: Tally = field(default_factory=Tally)

    @property
    def ok(self) -> bool:
        return self.oracle_ok and not self.violations and not self.error

    def line(self) -> str:
        rec = "-" if self.recovery_s is None else f"{self.recovery_s:.1f} s"
        if self.bound_s is not None:
            rec += f" (bound {self.bound_s:.0f} s)"
        health = "-" if self.health_ok_s is None else f"{self.health_ok_s:.1f} s"
        gap = "-" if self.gap_s is None else f"{self.gap_s:.1f} s"
        down = ", ".join(f"{k} {v}" for k, v in sorted(self.verdicts_down.items())) or "none"
        state = "ok" if self.ok else "FAILED"
        took = "" if self.took_s is None else f"; took {self.took_s:.0f} s"
        if self.took_s is not None and self.catch_up_s is not None:
            took += f" (catch-up before the oracle {self.catch_up_s:.1f} s)"
        text = (f"step {self.number:2d} {self.action:18s} {state:6s} every stage again {rec:8s}"
                f" longest gap {gap:8s} health OK again {health}, while down: {down};"
                f" {self.note}{took}")  # fmt: skip
        for problem in [self.error, *self.violations, *([] if self.oracle_ok else self.oracle)]:
            if problem:
                text += f"\n      {problem}"
        return text


class HealthWatch(threading.Thread):
    """Samples health (every group, the declared jobs) and the job's liveness until stopped."""

    def __init__(self, world: ChaosWorld, every: float = 2.0) -> None:
        super().__init__(name="chaos-health", daemon=True)
        self.world, self.every = world, every
        self.samples: list[Sample] = []
        self.held = threading.Event()
        self._halt = threading.Event()

    def run(self) -> None:
        while not self._halt.is_set():
            try:
                self.samples.append(self._sample())
            except Exception as exc:  # noqa: BLE001 - a sample that failed is not a verdict
                self.samples.append(Sample(time.time(), "error", False, False, True, str(exc)))
            self._halt.wait(self.every)

    def _sample(self) -> Sample:
        held = self.held.is_set()
        live = self._live()
        report = run_checks(self.world.settings, THRESHOLDS)
        live = live or self._live()  # down only if down before and after
        now = time.time()
        stalled = False
        for job, stages in self.world.jobs.items():
            newest = newest_batches(self.world, job)
            stalled = stalled or any(now - newest.get(s, 0.0) > STALLED_S for s in stages)
        failing = [r.message for r in report.results if r.level is not Level.OK][:2]
        return Sample(now, report.level.value, live, stalled, held or self.held.is_set(),
                      "; ".join(failing) or report.summary()[:200])

    def _live(self) -> bool:
        """Whether a driver of each job is live and running its stages: the master's view,
        or without the master the state root's (a driver holding the job's lease runs on). A
        driver still starting (a relaunch after a node loss, the next version of a handover)
        is not: health must not say OK then."""
        registry = self.world.registry
        for job in self.world.jobs:
            try:
                view = registry.view(job)
            except StreamopsError:
                view = view_of(self.world.settings, job, None)
            if not (view.is_live and view.state == "RUNNING"):
                return False
        return True

    def between(self, t0: float, t1: float) -> list[Sample]:
        return [s for s in self.samples if t0 <= s.at <= t1]

    def stop(self) -> None:
        self._halt.set()
        self.join(30)


def newest_batches(world: ChaosWorld, job: str) -> dict[str, float]:
    """Per stage, when it last committed a batch (any driver of the job: the status history)."""
    path = world.settings.layout.status_history(job)
    newest: dict[str, float] = {}
    if not path.is_file():
        return newest
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        at = float(rec.get("last_batch_at") or 0)
        if at > newest.get(rec.get("stage"), 0.0):
            newest[rec["stage"]] = at
    return newest


def judge_health(samples: Sequence[Sample]) -> tuple[dict[str, int], list[str]]:
    """Verdicts seen while the job was down or stalled, and the samples that said OK then."""
    seen: dict[str, int] = {}
    wrong = []
    for s in samples:
        down = not s.live or (s.stalled and not s.held)
        if not down:
            continue
        seen[s.level] = seen.get(s.level, 0) + 1
        if s.level == Level.OK.value:
            why = ("a job without a driver running its stages" if not s.live
                   else f"a stage idle over {STALLED_S:.0f} s")  # fmt: skip
            wrong.append(f"health OK at {time.strftime('%H:%M:%S', time.gmtime(s.at))} while "
                         f"{why}: {s.message}")  # fmt: skip
    return seen, wrong


def run_step(world: ChaosWorld, watch: HealthWatch, number: int, action: Action,
             rng: random.Random) -> StepReport:  # fmt: skip
    report = StepReport(number, action.name, action.kind, bound_s=action.recover_s)
    t0 = time.time()
    try:
        inflicted = action.run(world, rng)
        report.note = inflicted.note
        report.recovery_s = float(wait_until(  # waited past the bound, to print the figure
            lambda: every_job_again({
                job: next_batches(world.cluster, job, inflicted.at, set(stages))
                for job, stages in world.jobs.items()}),
            max(2 * action.recover_s, action.recover_s + 60),
            f"every stage of both jobs to commit again after {action.name}", interval=0.5,
            describe=world.describe,
        ))  # type: ignore[arg-type]  # fmt: skip
        per_job = {job: next_batches(world.cluster, job, inflicted.at, set(stages))
                   for job, stages in world.jobs.items()}  # fmt: skip
        report.note += "; every stage again per job: " + ", ".join(
            f"{job} {s:.1f} s" for job, s in per_job.items() if s is not None)
        if inflicted.recover_s is not None:
            report.bound_s = inflicted.recover_s
        late = recovery_problem(action, report.recovery_s, report.bound_s)
        report.gap_s = max(processing_gap(world.settings.layout, job, inflicted.at,
                                          inflicted.at + report.recovery_s)
                           for job in world.jobs)  # fmt: skip
        if inflicted.then is not None:
            inflicted.then()
        before_ok: list[str] = []
        report.health_ok_s, not_ok = wait_health_ok(lambda: _health(world), seen=before_ok)
        if report.health_ok_s is not None and report.health_ok_s > SLOW_HEALTH_S:
            report.note += "; health before OK: " + " | ".join(before_ok[-3:])[:600]
        report.error = "; ".join(p for p in (late, not_ok) if p)
        watch.held.set()
        try:
            comparisons, report.catch_up_s = world.check()
        finally:
            watch.held.clear()
        report.oracle = [c.summary() for c in comparisons]
        report.oracle_ok = all(c.ok for c in comparisons)
        report.tally = tally(comparisons)
    except Exception as exc:  # noqa: BLE001 - reported with the seed by the caller
        report.error = "; ".join(p for p in (report.error, f"{type(exc).__name__}: {exc}"[:2000])
                                 if p)  # fmt: skip
    report.verdicts_down, report.violations = judge_health(watch.between(t0, time.time()))
    report.took_s = time.time() - t0
    return report


def _health(world: ChaosWorld) -> tuple[str, str]:
    report = run_checks(world.settings, AFTER_STEP)
    running = all(r.state == "running" or not r.keep_running
                  for r in gather_daemons(world.settings.layout).values())  # fmt: skip
    return health_after_step(report.results, world.jobs, daemons_running=running)


def _holds(action: Action, world: ChaosWorld, wait: float) -> bool:
    deadline = time.monotonic() + wait
    while not action.needs(world):
        if time.monotonic() >= deadline:
            return False
        time.sleep(1.0)
    return True


def run_campaign(world: ChaosWorld, seed: int, steps: int, *, short: bool,
                 only: Sequence[str] = (), out: list[StepReport] | None = None,
                 stop_at_failure: bool = True) -> list[StepReport]:  # fmt: skip
    """Run ``steps`` drawn actions (or the actions named in ``only``, in that order). A drawn
    action whose precondition fails is drawn again; a named one fails its step."""
    actions = [BY_NAME[n] for n in only] if only else draw(seed, steps, short, world)
    pool = pool_of(short, world)
    rng = random.Random(seed * 7919 + 1)
    redraw_rng = random.Random(seed * 104729 + 3)
    reports = out if out is not None else []
    watch = HealthWatch(world)
    watch.start()
    try:
        wait = 0.0 if not only else PRECONDITION_WAIT_S
        for number, drawn in enumerate(actions, start=1):
            action, failed = choose(drawn, pool, lambda a: _holds(a, world, wait), redraw_rng,
                                    redraw=not only)  # fmt: skip
            if action is None:
                report = StepReport(number, drawn.name, drawn.kind, error="its precondition "
                                    f"does not hold (tried {', '.join(failed)}): not run")
            else:
                world.last_step = number == len(actions)
                report = run_step(world, watch, number, action, rng)
                if failed:
                    report.note += f" (drawn instead of {', '.join(failed)}: precondition)"
            reports.append(report)
            print(report.line(), flush=True)
            if not report.ok and stop_at_failure:
                break
    finally:
        watch.stop()
    ran = [r.action for r in reports if r.recovery_s is not None]
    print(f"steps run to their judgement: {len(ran)} of {len(actions)}: {', '.join(ran)}",
          flush=True)  # fmt: skip
    return reports


def replay_hint(seed: int, steps: int) -> str:
    return (f"seed {seed}: replay with STREAMOPS_CHAOS_SEED={seed} ./scripts/test.sh "
            f"tests/chaos (or tests/perf/chaos_soak.py --steps {steps} --seed {seed})")
