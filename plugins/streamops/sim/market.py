"""The simulated market of the trade analyser: the trade record and its deterministic source.

A :class:`Market` is to trades what :class:`~streamops.sim.fleet.Fleet` is to pings: the same
seed gives the same symbols and the same sequence of (symbol, price, quantity), whatever the
timing; only a trade's ``time`` comes from a clock. Prices do a geometric random walk per
symbol on a 0.01 tick, so moving averages move plausibly and differ between symbols.

Wire format (served by the trades producer through fleetsim-beta's log server): a compact JSON
object ``{"sequence", "symbol", "time", "price", "quantity"}``; ``time`` is epoch seconds with
millisecond precision, like a ping's.
"""

from __future__ import annotations

import bisect
import json
import math
import random
import string
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from streamops.sim.fleet import check_param

TICK = 0.01
MIN_PRICE = 1.0
DEFAULT_SYMBOLS = 32
DEFAULT_VOLATILITY = 0.0005
"""Standard deviation of one trade's log-return: about 5 % over 10k trades of a symbol."""


@dataclass(frozen=True, slots=True)
class Trade:
    """One trade: ``quantity`` shares of ``symbol`` at ``price`` at event time ``time``."""

    sequence: int
    symbol: str
    time: float
    price: float
    quantity: int

    @property
    def time_ms(self) -> int:
        """The event time in integer milliseconds: the unit windows are computed in (the
        analyser and the oracle both round to it, so no float decides a window boundary)."""
        return round(self.time * 1000)

    def to_dict(self) -> dict[str, Any]:
        return {
            "sequence": self.sequence,
            "symbol": self.symbol,
            "time": self.time,
            "price": self.price,
            "quantity": self.quantity,
        }

    def to_json(self) -> str:
        """The compact JSON text served for this trade."""
        return json.dumps(self.to_dict(), separators=(",", ":"))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Trade:
        """Build a trade from its JSON object; ``ValueError`` if a field is missing or wrong."""
        try:
            sequence, quantity = data["sequence"], data["quantity"]
            integers = (sequence, quantity)
            if not all(isinstance(v, int) and not isinstance(v, bool) for v in integers):
                raise ValueError("sequence and quantity must be integers")
            symbol = data["symbol"]
            if not isinstance(symbol, str) or not symbol:
                raise ValueError("symbol must be a non-empty string")
            return cls(sequence, symbol, float(data["time"]), float(data["price"]), quantity)
        except KeyError as exc:
            raise ValueError(f"missing field {exc.args[0]}") from None


class Market:
    """``symbols`` deterministic tickers and their prices; :meth:`next_trade` draws a trade.

    A trade picks a symbol (some trade more often than others: weights fixed by the seed),
    moves its price by a random log-return of ``volatility`` and draws a quantity (mostly
    small, now and then a block trade).
    """

    def __init__(
        self, seed: int, symbols: int = DEFAULT_SYMBOLS, volatility: float = DEFAULT_VOLATILITY
    ) -> None:
        check_param(
            isinstance(symbols, int) and 1 <= symbols <= 500,
            "symbols",
            symbols,
            "must be an integer in 1..500",
        )
        check_param(volatility >= 0, "volatility", volatility, "must be >= 0")
        self._rng = rng = random.Random(seed)
        self.volatility = volatility
        names: list[str] = []
        while len(names) < symbols:
            name = "".join(rng.choice(string.ascii_uppercase) for _ in range(rng.choice((3, 4))))
            if name not in names:
                names.append(name)
        self.symbols: tuple[str, ...] = tuple(names)
        self._prices = [round(rng.uniform(10.0, 500.0), 2) for _ in names]
        weights = [rng.uniform(0.2, 1.0) for _ in names]
        total = sum(weights)
        self._cumulative = [sum(weights[: i + 1]) / total for i in range(len(weights))]

    def resume(self, trades: Iterable[Trade]) -> None:
        """Continue each symbol's walk from its last price in ``trades`` (a restarted producer
        recovers them from its durable log, so prices do not jump back to their seeds)."""
        index = {name: i for i, name in enumerate(self.symbols)}
        for trade in trades:
            if trade.symbol in index:
                self._prices[index[trade.symbol]] = trade.price

    def next_trade(self, sequence: int, at: float) -> Trade:
        rng = self._rng
        roll = rng.random()
        i = min(bisect.bisect_right(self._cumulative, roll), len(self.symbols) - 1)
        moved = self._prices[i] * math.exp(rng.gauss(0.0, self.volatility))
        self._prices[i] = price = max(MIN_PRICE, round(round(moved / TICK) * TICK, 2))
        quantity = 1 + int(rng.expovariate(1 / 40))
        if rng.random() < 0.01:  # a block trade
            quantity *= 50
        return Trade(sequence, self.symbols[i], round(at, 3), price, quantity)


__all__ = ["DEFAULT_SYMBOLS", "Market", "Trade"]
