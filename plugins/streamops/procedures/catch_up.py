"""Changes timed to the backlog: the catch-up a stop would cost, predicted, pure.

A change that stops a job (upgrade, restart, cluster restart) processes nothing for a
*gap*; meanwhile its input piles onto the *backlog* already there, and once it runs again
the job drains the pile at its *processing rate* minus its *input rate*. From these three
measured things (:class:`Measured`) :func:`predict` tells how high the end-to-end latency
climbs and how long it stays above a job's ``latency_slo`` objective (:class:`Prediction`);
:mod:`streamops.procedures.backlog_gate` measures them through the operations port and
waits or refuses. The model, with ``cap`` the processing rate, ``rate`` the input rate::

    now      = backlog / cap                    the queueing delay before the stop
    peak     = now + gap                        a row arriving at the stop waits it all
    pile     = backlog + rate * gap             rows queued when the job runs again
    catch_up = pile / (cap - rate)              until the queue is empty again
    breach   = (gap - max(0, objective - now))  above the objective while stopped
             + max(0, pile - objective * cap) / (cap - rate)    and while draining

(``breach`` is 0 when ``peak`` stays within the objective, infinite when ``cap <= rate``.)
A job of several stages drains at its slowest one: the stage with the least headroom.

:func:`advise` sizes the cluster the same way, after Flink's autoscaler: a target capacity
``backlog / catch_up + rate * restart / catch_up + rate / utilization`` in rows per second,
divided by what one core processes now.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

DEFAULT_GAP_S = 30.0
"""The gap assumed when none of this procedure's runs on the job was measured."""
TARGET_UTILIZATION = 0.7
CATCH_UP_S = 1800.0  # Flink's default catch-up duration: 30 minutes


@dataclass(frozen=True)
class StageRates:
    """One stage's last batch: rows arriving and rows processed per second."""

    stage: str
    input_rps: float
    processed_rps: float


@dataclass(frozen=True)
class Measured:
    """The three measured terms: the procedure's gap (and where it comes from), the sources'
    backlog in rows (and what could not be counted), and the stages' rates."""

    gap_s: float
    gap_source: str  # e.g. "upgrade of 14:02:11" or "assumed"
    backlog_rows: int
    stages: tuple[StageRates, ...]
    uncounted: tuple[str, ...] = ()

    @property
    def bottleneck(self) -> StageRates | None:
        """The stage with the least headroom (processed / input), None without rates."""
        known = [s for s in self.stages if s.processed_rps > 0]
        return min(known, key=lambda s: s.processed_rps / max(s.input_rps, 1e-9), default=None)

    def terms(self) -> str:
        b = self.bottleneck
        rates = (f"processing {b.processed_rps:.1f} rows/s vs input {b.input_rps:.1f} rows/s "
                 f"(stage {b.stage})" if b else "no stage reports its rates")  # fmt: skip
        left = f" (not counted: {'; '.join(self.uncounted)})" if self.uncounted else ""
        return (f"gap {self.gap_s:.1f}s ({self.gap_source}), backlog {self.backlog_rows} "
                f"rows{left}, {rates}")  # fmt: skip


@dataclass(frozen=True)
class Prediction:
    """What a stop of ``gap_s`` would do to the latency, against the objective."""

    measured: Measured
    objective_s: float
    allowed_breach_s: float
    now_s: float  # the queueing delay before the stop
    peak_s: float
    breach_s: float  # how long the latency stays above the objective
    catch_up_s: float  # until the queue is empty again

    @property
    def known(self) -> bool:
        """Whether the rates were known (without them nothing is predicted: no wait)."""
        return self.measured.bottleneck is not None

    @property
    def ok(self) -> bool:
        return not self.known or self.breach_s <= self.allowed_breach_s

    def render(self) -> str:
        if not self.known:
            return f"{self.measured.terms()}: no prediction"
        return (f"{self.measured.terms()} → latency {self.now_s:.1f}s now, peak "
                f"{_s(self.peak_s)}, above the objective {self.objective_s:g}s for "
                f"{_s(self.breach_s)} (allowed {self.allowed_breach_s:g}s), caught up in "
                f"{_s(self.catch_up_s)}")  # fmt: skip


def _s(seconds: float) -> str:
    return "ever (processing does not outpace the input)" if math.isinf(seconds) else (
        f"{seconds:.1f}s")  # fmt: skip


def predict(m: Measured, objective_s: float, allowed_breach_s: float) -> Prediction:
    """The latency a stop of ``m.gap_s`` would cause, by the model of the module's doc."""
    b = m.bottleneck
    if b is None:
        return Prediction(m, objective_s, allowed_breach_s, 0.0, m.gap_s, 0.0, 0.0)
    cap, rate, gap = b.processed_rps, b.input_rps, m.gap_s
    now = m.backlog_rows / cap
    peak = now + gap
    pile = m.backlog_rows + rate * gap
    net = cap - rate
    catch_up = pile / net if net > 0 else math.inf
    if peak <= objective_s:
        breach = 0.0
    elif net <= 0:
        breach = math.inf
    else:
        breach = gap - max(0.0, objective_s - now) + max(0.0, pile - objective_s * cap) / net
    return Prediction(m, objective_s, allowed_breach_s, now, peak, breach, catch_up)


def longest_pause(batch_times: Sequence[float], since: float, until: float) -> float | None:
    """The benchmarks' gap: the longest time without a committed batch around
    ``[since, until]`` (from the last batch before ``since`` to the first after ``until``);
    None when no batch followed ``until`` (the window is not closed)."""
    times = sorted(batch_times)
    before = [t for t in times if t <= since][-1:]
    after = [t for t in times if t > until][:1]
    if not after:
        return None
    window = before + [t for t in times if since < t <= until] + after
    return max((b - a for a, b in zip(window, window[1:], strict=False)), default=0.0)


@dataclass(frozen=True)
class Advice:
    """The cores and workers a target capacity needs, with the formula's terms."""

    backlog_term: float  # rows/s: the backlog drained within the catch-up
    restart_term: float  # rows/s: what piles up during a restart, drained too
    rate_term: float  # rows/s: the input at the target utilization
    per_core: float  # rows/s one core processes now
    cores: int
    workers: int
    partitions: int

    @property
    def target(self) -> float:
        return self.backlog_term + self.restart_term + self.rate_term

    def lines(self, m: Measured, *, catch_up_s: float, utilization: float) -> list[str]:
        return [
            f"measured: {m.terms()}",
            f"target capacity = backlog / catch-up + rate * restart / catch-up + rate / "
            f"utilization = {self.backlog_term:.1f} + {self.restart_term:.1f} + "
            f"{self.rate_term:.1f} = {self.target:.1f} rows/s (catch-up {catch_up_s:g}s, "
            f"utilization {utilization:g})",
            f"per core: {self.per_core:.1f} rows/s → {self.cores} cores, {self.workers} "
            f"workers, {self.partitions} state partitions",
        ]


def advise(m: Measured, *, cores_now: int, cores_per_worker: int,
           catch_up_s: float = CATCH_UP_S,
           utilization: float = TARGET_UTILIZATION) -> Advice | None:  # fmt: skip
    """Flink's autoscaler formula over ``m`` (the restart time is the gap); ``None`` when no
    stage reports its rates. State partitions: the cores rounded up to a power of two (a
    task per core per batch; fixed once a stateful stage checkpointed)."""
    b = m.bottleneck
    if b is None or cores_now < 1 or cores_per_worker < 1:
        return None
    backlog = m.backlog_rows / catch_up_s
    restart = b.input_rps * m.gap_s / catch_up_s
    rate = b.input_rps / utilization
    per_core = b.processed_rps / cores_now
    cores = max(1, math.ceil((backlog + restart + rate) / per_core))
    return Advice(backlog, restart, rate, per_core, cores, math.ceil(cores / cores_per_worker),
                  1 << (cores - 1).bit_length())  # fmt: skip
