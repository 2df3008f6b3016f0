"""What fleetsim-alpha and fleetsim-beta share: run state, the paced emission loop and the
``python -m streamops.sim.<source>`` entry point."""

from __future__ import annotations

import argparse
import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

from streamops.exceptions import SimulatorError
from streamops.sim.fleet import Fleet, Pacer, Timestamps


class SimulatorRun:
    """State and lifecycle helpers common to both simulators.

    Subclasses set ``source`` (``"alpha"`` or ``"beta"``), check their parameters, then call
    :meth:`_init_run` where they create their :class:`Fleet`.
    """

    source = ""

    def _init_run(
        self,
        seed: int,
        vehicles: int,
        vin_prefix: str,
        rate: float,
        malformed_every: int,
        max_pings: int | None,
        journal: str | os.PathLike[str] | None,
        clock: Callable[[], float],
    ) -> None:
        self._fleet = Fleet(seed, vehicles, vin_prefix)
        self.rate = float(rate)
        self.malformed_every = malformed_every
        self.max_pings = max_pings
        self.journal_path = None if journal is None else Path(journal)
        self._clock = clock
        self._stop = threading.Event()
        self._done = threading.Event()
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None
        self._next_sequence = 1

    @property
    def done(self) -> bool:
        """Whether the run has ended (``max_pings`` reached, stopped, or failed)."""
        return self._done.is_set()

    def wait_done(self, timeout: float | None = None) -> bool:
        """Wait until the run ends (e.g. ``max_pings`` emitted); ``False`` on timeout."""
        done = self._done.wait(timeout)
        self._raise_if_failed()
        return done

    def _raise_if_failed(self) -> None:
        if self._error is not None:
            raise SimulatorError(f"fleetsim-{self.source} failed: {self._error}") from self._error

    def _pace(
        self,
        emit: Callable[[list[float]], None],
        *,
        stopped: Callable[[], bool],
        wait: Callable[[], object],
        after_emit: Callable[[], None] | None = None,
    ) -> None:
        """Emit the due records at ``rate`` until ``stopped()`` or ``max_pings``; ``wait()``
        between ticks, ``after_emit()`` after each tick's emission."""
        pacer = Pacer(self.rate, self.max_pings)
        stamps = Timestamps(self._clock, self.rate)
        while not stopped():
            due = pacer.due()
            if due:
                emit(stamps.take(due))
            if after_emit is not None:
                after_emit()
            if pacer.exhausted:
                break
            wait()


def standalone_main(source: str, description: str, argv: Sequence[str] | None) -> int:
    """``python -m streamops.sim.<source> [flags]``, the same as ``streamops sim <source>``."""
    from streamops.cli import sim_cmds

    parser = argparse.ArgumentParser(
        prog=f"python -m streamops.sim.{source}", description=description
    )
    getattr(sim_cmds, f"add_{source}_arguments")(parser)
    return sim_cmds.run_standalone(parser, getattr(sim_cmds, f"run_{source}"), argv)


__all__ = ["SimulatorRun", "standalone_main"]
