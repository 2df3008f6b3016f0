"""``streamops sim alpha|beta``: run a fleet simulator in the foreground.

Runs until Ctrl-C, SIGTERM or ``--max-pings``, logging progress every ``--progress-every``
seconds. The same verbs are available as ``python -m streamops.sim.alpha`` / ``.beta``.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from streamops.exceptions import StreamopsError
from streamops.settings import Settings
from streamops.sim.alpha import AlphaSimulator
from streamops.sim.beta import BetaSimulator

log = logging.getLogger(__name__)


class Simulator(Protocol):
    """What the foreground runner needs of a simulator."""

    source: str

    @property
    def emitted(self) -> int: ...

    def start(self) -> None: ...

    def stop(self) -> None: ...

    def wait_done(self, timeout: float | None = None) -> bool: ...


def register(sub: Any) -> None:
    """Add the ``sim`` command (``alpha``, ``beta``) to the ``streamops`` subparsers."""
    sim = sub.add_parser("sim", help="run a fleet simulator (fleetsim-alpha, fleetsim-beta)")
    verbs = sim.add_subparsers(dest="sim_command", required=True, metavar="SIMULATOR")
    alpha = verbs.add_parser("alpha", help="write ping CSV files into a directory")
    add_alpha_arguments(alpha)
    alpha.set_defaults(handler=run_alpha)
    beta = verbs.add_parser("beta", help="serve pings over HTTP: GET /pings?since=N&limit=M")
    add_beta_arguments(beta)
    beta.set_defaults(handler=run_beta)


def _add_common(parser: argparse.ArgumentParser, seed: int, vin_prefix: str) -> None:
    parser.add_argument("--seed", type=int, default=seed, help="fleet seed (default %(default)s)")
    parser.add_argument("--vehicles", type=int, default=50, help="fleet size (default 50)")
    parser.add_argument("--rate", type=float, default=10.0, help="pings per second (default 10)")
    parser.add_argument(
        "--malformed-every",
        type=int,
        default=0,
        metavar="N",
        help="make every Nth record malformed (default 0 = never)",
    )
    parser.add_argument(
        "--max-pings",
        type=int,
        default=None,
        metavar="N",
        help="stop after N records (default: run until stopped)",
    )
    parser.add_argument(
        "--journal",
        default=None,
        metavar="PATH",
        help="append every emitted record to this JSONL oracle journal",
    )
    parser.add_argument(
        "--vin-prefix", default=vin_prefix, help="VIN prefix of this fleet (default %(default)s)"
    )
    parser.add_argument(
        "--progress-every",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="log progress this often (default 10)",
    )


def add_alpha_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags of ``sim alpha``."""
    parser.add_argument(
        "--dir", default=None, help="drop directory (default <state-root>/data/alpha)"
    )
    parser.add_argument(
        "--pings-per-file", type=int, default=100, help="records per file at most (default 100)"
    )
    parser.add_argument(
        "--max-file-age",
        type=float,
        default=1.0,
        metavar="SECONDS",
        help="close a file this long after its first record (default 1)",
    )
    _add_common(parser, seed=1, vin_prefix="1A")


def add_beta_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags of ``sim beta``."""
    parser.add_argument("--host", default="127.0.0.1", help="bind address (default loopback)")
    parser.add_argument("--port", type=int, default=8000, help="port (default 8000, 0 = any)")
    parser.add_argument(
        "--history", type=int, default=100_000, help="records held for clients (default 100000)"
    )
    parser.add_argument(
        "--data-dir",
        default=None,
        metavar="DIR",
        help="keep the stream in DIR (stream id, log segments): the history, the sequence and "
        "the stream id survive a restart. Without it the history is in memory only and every "
        "start is a new stream (new id) from sequence 1",
    )
    parser.add_argument(
        "--linger",
        action="store_true",
        help="after --max-pings records, go on serving them until stopped (SIGTERM), so that "
        "readers can catch up (default: stop serving at once)",
    )
    _add_common(parser, seed=2, vin_prefix="1B")


def run_alpha(args: argparse.Namespace, settings: Settings) -> int:
    """Handler of ``sim alpha``."""
    directory = args.dir if args.dir is not None else settings.layout.alpha_dir
    sim = AlphaSimulator(
        directory,
        seed=args.seed,
        vehicles=args.vehicles,
        rate=args.rate,
        pings_per_file=args.pings_per_file,
        max_file_age=args.max_file_age,
        malformed_every=args.malformed_every,
        max_pings=args.max_pings,
        journal=args.journal,
        vin_prefix=args.vin_prefix,
    )
    log.info("fleetsim-alpha writing %s at %s pings/s", sim.directory, args.rate)
    return run_foreground(sim, progress_every=args.progress_every)


def run_beta(args: argparse.Namespace, settings: Settings) -> int:
    """Handler of ``sim beta``."""
    sim = BetaSimulator(
        host=args.host,
        port=args.port,
        seed=args.seed,
        vehicles=args.vehicles,
        rate=args.rate,
        history=args.history,
        malformed_every=args.malformed_every,
        max_pings=args.max_pings,
        journal=args.journal,
        vin_prefix=args.vin_prefix,
        data_dir=args.data_dir,
    )
    log.info("fleetsim-beta stream %s, next sequence %d", sim.stream, sim.state.head()["last"] + 1)
    return run_foreground(sim, progress_every=args.progress_every, linger=args.linger)


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


def run_standalone(
    parser: argparse.ArgumentParser,
    handler: Callable[[argparse.Namespace, Settings], int],
    argv: Sequence[str] | None = None,
) -> int:
    """Entry point of ``python -m streamops.sim.alpha|beta``: parse, configure, run."""
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    try:
        return handler(args, Settings.from_env())
    except StreamopsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
