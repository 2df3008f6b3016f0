"""The flags of the simulators (``streamops sim alpha|beta|trades``, ``python -m
streamops.sim.<name>``), apart from the simulators so the command line is built without
importing them (FastAPI, uvicorn)."""

from __future__ import annotations

import argparse

from streamops.sim.market import DEFAULT_SYMBOLS
from streamops_contract.hosts import LOOPBACK

DEFAULT_RATE = 10_000.0
"""Trades per second of ``sim trades``."""
DEFAULT_PORT = 8010
"""Port of ``sim trades``."""
DEFAULT_HISTORY = 600_000
"""Records ``sim trades`` holds for its readers: one minute at 10k/s."""


def add_common_arguments(parser: argparse.ArgumentParser, seed: int, vin_prefix: str) -> None:
    """The flags both simulators take (fleet, rate, malformed records, journal, progress)."""
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


def add_server_arguments(
    parser: argparse.ArgumentParser,
    port: int = 8000,
    history: int = 100_000,
    limit_flag: str = "--max-pings",
) -> None:
    """The flags of a log server (``sim beta``, ``sim trades``): address, history, data dir."""
    parser.add_argument("--host", default=LOOPBACK, help="bind address (default loopback)")
    parser.add_argument("--port", type=int, default=port, help=f"port (default {port}, 0 = any)")
    parser.add_argument(
        "--history",
        type=int,
        default=history,
        help=f"records held for clients (default {history})",
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
        help=f"after {limit_flag} records, go on serving them until stopped (SIGTERM), so that "
        "readers can catch up (default: stop serving at once)",
    )


def add_beta_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags of ``sim beta``."""
    add_server_arguments(parser)
    add_common_arguments(parser, seed=2, vin_prefix="1B")
    parser.add_argument(
        "--pause-file", default=None, metavar="PATH",
        help="while this file exists, emit nothing (the server answers on): a drill's hold",
    )  # fmt: skip


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
    add_common_arguments(parser, seed=1, vin_prefix="1A")


def add_trades_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags of ``sim trades``."""
    add_server_arguments(
        parser, port=DEFAULT_PORT, history=DEFAULT_HISTORY, limit_flag="--max-trades"
    )
    parser.add_argument("--seed", type=int, default=1, help="market seed (default 1)")
    parser.add_argument(
        "--symbols", type=int, default=DEFAULT_SYMBOLS, help="number of symbols (default 32)"
    )
    parser.add_argument(
        "--rate", type=float, default=DEFAULT_RATE, help="trades per second (default 10000)"
    )
    parser.add_argument(
        "--max-trades", type=int, default=None, metavar="N", help="stop after N trades"
    )
    parser.add_argument(
        "--journal", default=None, metavar="PATH", help="append every trade to this journal"
    )
    parser.add_argument(
        "--progress-every", type=float, default=10.0, metavar="SECONDS", help="log this often"
    )


def add_transactions_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags of ``sim transactions``."""
    parser.add_argument(
        "--store-url", default=None, metavar="URL",
        help="SQLAlchemy URL of the store of `transactions` and its journal (default "
        "sqlite:///<state-root>/transactions.db; PostgreSQL: postgresql+psycopg2://...)",
    )  # fmt: skip
    parser.add_argument("--rate", type=float, default=10.0, help="changes per second (default 10)")
    parser.add_argument(
        "--max-entries", type=int, default=None, metavar="N", help="stop after N changes"
    )
    parser.add_argument(
        "--capacity", type=int, default=9000, metavar="N",
        help="entries the event journal keeps, the oldest trimmed (default 9000)",
    )  # fmt: skip
    parser.add_argument("--seed", type=int, default=1, help="seed of the changes (default 1)")
    parser.add_argument(
        "--journal", default=None, metavar="PATH",
        help="append every journal entry written to this JSONL record file (the oracle's, "
        "unbounded)",
    )  # fmt: skip
    parser.add_argument(
        "--progress-every", type=float, default=10.0, metavar="SECONDS", help="log this often"
    )
