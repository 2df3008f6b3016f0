"""Hold a slow stream's new data back until enough of it waits, or the longest delay passed.

A micro-batch costs the driver and the executors about the same whether it carries ten
records or ten thousand (planning, the state store's commit, the sink's transaction, the
offset and commit logs): a stream of a few records a second pays that cost at every trigger.
A source with a holdback answers Spark's ``latestOffset`` with its last position (nothing new:
no batch) while fewer than ``min_units`` (records, or files) wait and it let data through
less than ``max_delay`` seconds ago; then it lets everything through (up to the batch's
maximum). A fast stream has its minimum waiting at every trigger and is never held;
a slow one is read every ``max_delay`` seconds instead of every trigger. The semantics of
Kafka's ``minOffsetsPerTrigger`` with ``maxTriggerDelay``, with one difference: the delay is
counted on the wall clock's grid (data goes at the first trigger of each ``max_delay`` slot of
the epoch, ``floor(now / max_delay)``), not from each source's last batch, so the sources of a
query, and the stages of a job, each their own Python process, let their data through at the
same trigger: one batch a slot per stage, where two sources with their own clocks drifted
apart and made two (measured, ``tests/perf/bench_steady.py``).

Nothing is skipped: held data stays at its source (the server's history, the directory, the
journal), its position not taken until it is let through. A reader's first answer is never
held (a new query, a restarted or upgraded driver reads what waits at once), nor data behind a
reset, nor a source asked for everything (``ReadAllAvailable``: a trigger ``availableNow``),
nor data that fills half of what a bounded source still keeps (``room``: fleetsim-beta's
history, the journal's capacity): a minimum larger than the source's history would otherwise
hold records until the source dropped them, and the stage would fail on the loss.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit

DEFAULT_DELAY_S = 10.0
MAX_DELAY_S = 60.0  # half the health check's default max_batch_age


class HoldbackError(ValueError):
    """A holdback option that is not a number, or out of range."""


@dataclass
class Holdback:
    """``min_units`` (0: never hold) and ``max_delay`` seconds; ``clock`` for tests."""

    min_units: int = 0
    max_delay: float = DEFAULT_DELAY_S
    clock: Callable[[], float] = time.time
    _slot: int | None = field(default=None, repr=False)  # of the last time data went

    @classmethod
    def from_options(cls, options: Mapping[str, str], min_key: str) -> Holdback:
        """From a source's options: ``min_key`` (e.g. ``min_records_per_batch``) and
        ``max_batch_delay`` (seconds, default 10 once a minimum is set)."""
        try:
            min_units = int(options.get(min_key) or 0)
            max_delay = float(options.get("max_batch_delay") or DEFAULT_DELAY_S)
        except ValueError as exc:
            raise HoldbackError(
                f"source options {min_key!r} and 'max_batch_delay' must be numbers: {exc}"
            ) from exc
        if min_units < 0 or not 0 < max_delay <= MAX_DELAY_S:
            raise HoldbackError(
                f"source option {min_key!r} must be >= 0 and 'max_batch_delay' in (0, "
                f"{MAX_DELAY_S:.0f}] seconds (got {min_units}, {max_delay}): the health check "
                "judges a stage that commits nothing for two minutes stalled"
            )
        return cls(min_units=min_units, max_delay=max_delay)

    def lets_through(self, waiting: int) -> bool:
        """Whether ``waiting`` (> 0) new units go into the next batch now; ``False``: keep
        them at the source for a later trigger (at the latest the first of the next slot)."""
        slot = int(self.clock() // self.max_delay)
        if (
            self.min_units <= 0
            or waiting >= self.min_units
            or self._slot is None
            or slot != self._slot
        ):
            self._slot = slot
            return True
        return False

    def holds(
        self, waiting: int, limit: ReadLimit, urgent: bool = False, room: int | None = None
    ) -> bool:
        """Whether a source answers its committed position (no batch) with ``waiting`` new
        units: never when nothing waits, when ``urgent`` (a reset, a late file: decided at
        once), when Spark asks for everything (``ReadAllAvailable``) or when ``waiting`` is
        half or more of ``room``, the units a bounded source keeps (None: unbounded)."""
        if waiting <= 0 or urgent or isinstance(limit, ReadAllAvailable):
            return False
        if room is not None and 2 * waiting >= room:
            return False  # held on, the oldest of them could be dropped by the source
        return not self.lets_through(waiting)
