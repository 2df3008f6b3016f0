"""The trades producer: trades of a simulated :class:`~streamops.sim.market.Market` served as a
durable, replayable log by fleetsim-beta's server.

One mechanism, two data sets: :class:`TradeSimulator` *is* a
:class:`~streamops.sim.beta.BetaSimulator` whose records come from :class:`TradeRecords`
instead of the fleet. Everything else is shared: the HTTP API (``GET /head``,
``GET /pings?since=&limit=``, the ``X-Stream-Id`` header), the bounded history, the durable
log (``--data-dir``: stream id and sequences survive a restart), the pacing, the journal for
the oracle, and on the Spark side the ``fleet_beta`` source, which reads ``(sequence, raw)``
of any record kind (the trade analyser parses ``raw`` as a trade).

Defaults suit the trade analyser: 10 000 trades/s over 32 symbols, port 8010, a history of
600 000 records (one minute at 10k/s, what a reader restarted from a savepoint may still need).
Run it with ``streamops sim trades`` or ``python -m streamops.sim.trades``.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import time
from collections.abc import Callable, Sequence

from streamops.settings import Settings
from streamops.sim.beta import BetaSimulator
from streamops.sim.durable_log import DEFAULT_SEGMENT_RECORDS
from streamops.sim.flags import DEFAULT_HISTORY, DEFAULT_PORT, DEFAULT_RATE, add_trades_arguments
from streamops.sim.journal import JournalRecord
from streamops.sim.market import DEFAULT_SYMBOLS, Market, Trade
from streamops.sim.runner import run_foreground, standalone_main
from streamops_contract.hosts import LOOPBACK

log = logging.getLogger(__name__)


class TradeRecords:
    """The :class:`~streamops.sim.beta.RecordGenerator` of trades: one per time, from
    ``market``, journaled with source ``trades``."""

    def __init__(self, market: Market) -> None:
        self.market = market

    def records(
        self, first_sequence: int, times: Sequence[float]
    ) -> list[tuple[str, JournalRecord]]:
        made = []
        for offset, at in enumerate(times):
            trade = self.market.next_trade(first_sequence + offset, at)
            raw = trade.to_json()
            made.append((raw, JournalRecord("trades", trade.sequence, False, None, raw, None,
                                            trade=trade)))  # fmt: skip
        return made


class TradeSimulator(BetaSimulator):
    """fleetsim-beta serving trades: deterministic from ``seed`` apart from event times.

    A restart on the same ``data_dir`` goes on with the same stream id at the next sequence;
    each symbol's price walk continues from its last logged price (the random draws restart
    from ``seed``, as beta's fleet does).
    """

    source = "trades"
    title = "tradesim"
    description = "trades of a simulated market"

    def __init__(
        self,
        *,
        host: str = LOOPBACK,
        port: int = DEFAULT_PORT,
        seed: int = 1,
        symbols: int = DEFAULT_SYMBOLS,
        rate: float = DEFAULT_RATE,
        history: int = DEFAULT_HISTORY,
        max_trades: int | None = None,
        journal: str | os.PathLike[str] | None = None,
        clock: Callable[[], float] = time.time,
        data_dir: str | os.PathLike[str] | None = None,
        segment_records: int = DEFAULT_SEGMENT_RECORDS,
    ) -> None:
        self.market = Market(seed, symbols)
        super().__init__(
            host=host,
            port=port,
            seed=seed,
            vehicles=1,  # the unused fleet of the shared run state: keep it tiny
            rate=rate,
            history=history,
            max_pings=max_trades,
            journal=journal,
            clock=clock,
            data_dir=data_dir,
            segment_records=segment_records,
            generator=TradeRecords(self.market),
        )
        if self.durable_log is not None and self.durable_log.tail:
            self.market.resume(Trade.from_dict(json.loads(raw)) for raw in self.durable_log.tail)


def run_from_args(args: argparse.Namespace, settings: Settings) -> int:
    """Handler of ``sim trades``."""
    sim = TradeSimulator(
        host=args.host,
        port=args.port,
        seed=args.seed,
        symbols=args.symbols,
        rate=args.rate,
        history=args.history,
        max_trades=args.max_trades,
        journal=args.journal,
        data_dir=args.data_dir,
    )
    log.info("tradesim stream %s, next sequence %d", sim.stream, sim.state.head()["last"] + 1)
    return run_foreground(sim, progress_every=args.progress_every, linger=args.linger)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m streamops.sim.trades [flags]``, the same as ``streamops sim trades``."""
    return standalone_main(
        "trades", "serve trades over HTTP (fleetsim-beta's log server)", add_trades_arguments,
        run_from_args, argv,
    )  # fmt: skip


if __name__ == "__main__":
    raise SystemExit(main())
