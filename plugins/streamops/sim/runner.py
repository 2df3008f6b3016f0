"""What fleetsim-alpha and fleetsim-beta share: run state, the paced emission loop, the flags
both take, the foreground run (until a signal or ``--max-pings``) and the
``python -m streamops.sim.<source>`` entry point.

Each simulator's flags are in :mod:`streamops.sim.flags` (light: the command line is built
without importing a simulator) and its handler (``run_from_args``) beside its class;
``streamops sim`` (:mod:`streamops.cli.sim_cmds`) only registers them, so a simulator never
imports the command line."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

from streamops.exceptions import SimulatorError, StreamopsError
from streamops.settings import Settings
from streamops.sim.fleet import Fleet, Pacer, Timestamps

log = logging.getLogger(__name__)

Handler = Callable[[argparse.Namespace, Settings], int]


class Simulator(Protocol):
    """What the foreground runner needs of a simulator."""

    source: str

    @property
    def emitted(self) -> int: ...

    def start(self) -> None: ...

    def stop(self) -> None: ...

    def wait_done(self, timeout: float | None = None) -> bool: ...


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
        self._paused = threading.Event()
        self._quiet = threading.Event()
        self.pause_file: Path | None = None
        """While this file exists, emission holds as after :meth:`pause` (another process's
        hold: ``sim beta --pause-file``)."""

    def _held(self) -> bool:
        return self._paused.is_set() or (self.pause_file is not None and self.pause_file.exists())

    def pause(self, timeout: float = 30.0) -> None:
        """Hold emission (a drill's check point); returns once the generator has published
        everything it emitted (alpha's partial file) and emits nothing more until
        :meth:`resume`. The server, if any, goes on answering."""
        self._quiet.clear()
        self._paused.set()
        if not self._quiet.wait(timeout) and not self._done.is_set():
            raise SimulatorError(f"fleetsim-{self.source} did not pause within {timeout:.0f}s")

    def resume(self) -> None:
        """Emit again after :meth:`pause` (the paused time is not made up in a burst)."""
        self._paused.clear()

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
        on_pause: Callable[[], None] | None = None,
    ) -> None:
        """Emit the due records at ``rate`` until ``stopped()`` or ``max_pings``; ``wait()``
        between ticks, ``after_emit()`` after each tick's emission, ``on_pause()`` once when
        :meth:`pause` holds the emission."""
        pacer = Pacer(self.rate, self.max_pings)
        stamps = Timestamps(self._clock, self.rate)
        while not stopped():
            if self._held():
                if not self._quiet.is_set():
                    if on_pause is not None:
                        on_pause()
                    self._quiet.set()
                pacer.forgive()
                wait()
                continue
            self._quiet.clear()
            due = pacer.due()
            if due:
                emit(stamps.take(due))
            if after_emit is not None:
                after_emit()
            if pacer.exhausted:
                break
            wait()


def standalone_main(
    source: str,
    description: str,
    add_arguments: Callable[[argparse.ArgumentParser], None],
    handler: Handler,
    argv: Sequence[str] | None,
) -> int:
    """``python -m streamops.sim.<source> [flags]``, the same as ``streamops sim <source>``:
    parse, configure logging, run ``handler``."""
    parser = argparse.ArgumentParser(
        prog=f"python -m streamops.sim.{source}", description=description
    )
    add_arguments(parser)
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    try:
        return handler(args, Settings.from_env())
    except StreamopsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


def run_foreground(
    sim: Simulator, *, progress_every: float = 10.0, stop_event: threading.Event | None = None,
    linger: bool = False,
) -> int:  # fmt: skip
    """Run ``sim`` until ``stop_event``, SIGINT/SIGTERM or the end of its ``max_pings`` (with
    ``linger``, until stopped: a server goes on serving what it emitted)."""
    stop = stop_event if stop_event is not None else threading.Event()
    restore = _install_signal_handlers(stop)
    started = time.monotonic()
    try:
        sim.start()
        try:
            _wait_with_progress(sim, stop, progress_every)
            if linger and not stop.is_set():
                log.info("fleetsim-%s: %d records emitted; serving them until stopped",
                         sim.source, sim.emitted)  # fmt: skip
                while not stop.wait(0.2):
                    pass
        except KeyboardInterrupt:
            log.info("fleetsim-%s: interrupted", sim.source)
        finally:
            sim.stop()
    finally:
        restore()
    log.info(
        "fleetsim-%s: stopped after %d records in %.1fs",
        sim.source,
        sim.emitted,
        time.monotonic() - started,
    )
    return 0


def _wait_with_progress(sim: Simulator, stop: threading.Event, progress_every: float) -> None:
    """Wait for ``stop`` or the end of the run, logging a progress line now and then."""
    last_log, last_count = time.monotonic(), 0
    while not stop.wait(min(0.2, progress_every)):
        if sim.wait_done(0):
            return
        now = time.monotonic()
        if now - last_log >= progress_every:
            count = sim.emitted
            log.info(
                "fleetsim-%s: %d records emitted (%.1f/s over the last %.0fs)",
                sim.source,
                count,
                (count - last_count) / (now - last_log),
                now - last_log,
            )
            last_log, last_count = now, count


def _install_signal_handlers(stop: threading.Event) -> Any:
    """Make SIGINT and SIGTERM set ``stop`` (main thread only); returns a restore function."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None

    def handler(signum: int, frame: object) -> None:
        log.info("received %s, stopping", signal.Signals(signum).name)
        stop.set()

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}

    def restore() -> None:
        for sig, old in previous.items():
            signal.signal(sig, old)

    return restore


__all__ = ["SimulatorRun", "run_foreground", "standalone_main"]
