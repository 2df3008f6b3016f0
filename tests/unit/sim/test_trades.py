"""The trades producer: fleetsim-beta's log server serving a market. Real uvicorn servers on
free loopback ports, real HTTP, real files (as in ``test_beta_durable.py``)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import requests
from support.oracle import SeriesValue, trade_windows

from streamops.cli import sim_cmds
from streamops.sim.beta import STREAM_HEADER, BetaSimulator
from streamops.sim.journal import read_journal, valid_trades
from streamops.sim.market import Market, Trade
from streamops.sim.trades import TradeSimulator

FIXED_CLOCK = 1_700_000_000.0


def producer(data_dir: Path | None, max_trades: int, **kwargs: Any) -> TradeSimulator:
    options: dict[str, Any] = {"port": 0, "seed": 7, "rate": 50_000, "history": 5000, **kwargs}
    return TradeSimulator(
        max_trades=max_trades, clock=lambda: FIXED_CLOCK, data_dir=data_dir, **options
    )


def run(sim: TradeSimulator) -> TradeSimulator:
    sim.start()
    assert sim.wait_done(10)
    return sim


def trades(sim: TradeSimulator, since: int, limit: int) -> list[Trade]:
    resp = requests.get(sim.url, params={"since": since, "limit": limit}, timeout=5)
    assert resp.status_code == 200 and resp.headers[STREAM_HEADER] == sim.stream
    return [Trade.from_dict(r) for r in resp.json()]


def test_the_market_is_deterministic_and_plausible() -> None:
    a, b = Market(3), Market(3)
    drawn = [a.next_trade(i, FIXED_CLOCK) for i in range(1, 20_001)]
    assert drawn == [b.next_trade(i, FIXED_CLOCK) for i in range(1, 20_001)]
    assert Market(4).symbols != a.symbols and len(set(a.symbols)) == 32
    by_symbol: dict[str, list[float]] = {}
    for t in drawn:
        assert t.quantity >= 1 and t.price >= 1.0 and round(t.price, 2) == t.price
        by_symbol.setdefault(t.symbol, []).append(t.price)
    assert len(by_symbol) == 32
    for prices in by_symbol.values():  # a random walk: small steps, no jumps
        steps = [abs(math.log(q / p)) for p, q in zip(prices, prices[1:], strict=False)]
        assert max(steps, default=0) < 0.01


def test_replay_from_any_sequence_and_a_restart_keep_the_trades(tmp_path: Path) -> None:
    journal = tmp_path / "trades.jsonl"
    first = run(producer(tmp_path / "log", 3000, journal=journal, segment_records=1000))
    try:
        assert isinstance(first, BetaSimulator)  # one mechanism: beta's server and log
        everything = trades(first, 0, 3000)
        assert [t.sequence for t in everything] == list(range(1, 3001))
        for since in (0, 1, 999, 1000, 2500):  # replay from any sequence: the same trades
            assert trades(first, since, 300) == everything[since : since + 300]
        stream = first.stream
    finally:
        first.stop()
    assert valid_trades(read_journal(journal)) == everything  # the oracle sees what was served

    second = run(producer(tmp_path / "log", 500, journal=journal, segment_records=1000))
    try:
        assert second.stream == stream
        after = trades(second, 0, 5000)
        assert after[:3000] == everything  # a restart keeps them, byte for byte
        assert [t.sequence for t in after] == list(range(1, 3501))
        last = {t.symbol: t.price for t in everything}
        for t in after[3000:]:  # each walk goes on from its last logged price
            if t.symbol in last:
                assert abs(math.log(t.price / last[t.symbol])) < 0.01
                last.pop(t.symbol)
    finally:
        second.stop()
    assert [t.sequence for t in valid_trades(read_journal(journal))] == list(range(1, 3501))


def test_the_same_seed_gives_the_same_trades_on_another_stream() -> None:
    one, two = run(producer(None, 400)), run(producer(None, 400))
    try:
        assert one.stream != two.stream
        assert trades(one, 0, 400) == trades(two, 0, 400)
    finally:
        one.stop()
        two.stop()


def test_the_cli_registers_sim_trades() -> None:
    import argparse

    parser = argparse.ArgumentParser()
    sim_cmds.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["sim", "trades", "--port", "0", "--max-trades", "5"])
    assert args.rate == 10_000 and args.port == 0 and args.symbols == 32
    assert args.history == 600_000 and args.data_dir is None


def test_the_oracle_windows_by_hand() -> None:
    """The batch recomputation the analyser is held to, on a few trades worked out by hand."""
    t0 = 1_700_000_000.0
    first = [Trade(1, "A", t0 + 0.2, 10.0, 1), Trade(2, "A", t0 + 0.9, 20.0, 2),
             Trade(3, "A", t0 + 5.0, 30.0, 3)]  # fmt: skip
    late = [Trade(4, "A", t0 + 0.5, 40.0, 4), Trade(5, "A", t0 + 3.9, 50.0, 5)]
    end = int(t0 * 1000)
    tumbling = trade_windows([first, late], series="v", size_ms=1000, slide_ms=1000,
                             measure="volume", lag_ms=2000)  # fmt: skip
    # watermark after the first batch: 5.0 - 2 = 3.0 s; [0, 1) is closed, [3, 4) is open
    assert tumbling.windows == {
        ("v", "A", end + 1000): SeriesValue(3.0, 2),
        ("v", "A", end + 6000): SeriesValue(3.0, 1),
        ("v", "A", end + 4000): SeriesValue(5.0, 1),
    }
    assert tumbling.dropped == {(1, "A", end + 1000)}
    sliding = trade_windows([first], series="a", size_ms=1000, slide_ms=500)
    # 0.2 is in [-0.5, 0.5) and [0, 1); 0.9 in [0, 1) and [0.5, 1.5)
    assert sliding.windows[("a", "A", end + 500)] == SeriesValue(10.0, 1)
    assert sliding.windows[("a", "A", end + 1000)] == SeriesValue(15.0, 2)
    assert sliding.windows[("a", "A", end + 1500)] == SeriesValue(20.0, 1)
    assert not sliding.dropped
