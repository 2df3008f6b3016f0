"""The simulators: the fleet-ping lab's fleetsim-alpha (CSV files) and fleetsim-beta (HTTP),
the trade analyser's trades producer and the operator tutorial's transactions producer.

Both draw deterministic GPS pings from a :class:`Fleet` and may append every record they
emit to an oracle journal (:func:`read_journal`). Run them from a terminal with
``streamops sim alpha|beta`` (or ``python -m streamops.sim.alpha|beta``) or from Python::

    sim = AlphaSimulator(directory, rate=100, journal="alpha.jsonl")
    sim.start(); ...; sim.stop()

The trades producer (``streamops sim trades``, :class:`TradeSimulator`) is fleetsim-beta's
server with a market instead of a fleet; the transactions producer
(:mod:`streamops.sim.transactions`) writes a store's journal table. Names are imported
lazily, so reading pings or a journal does not import FastAPI.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from streamops.sim.alpha import AlphaSimulator
    from streamops.sim.beta import BetaSimulator, create_app
    from streamops.sim.fleet import Fleet, Ping, is_valid_vin
    from streamops.sim.journal import JournalRecord, read_journal, valid_pings
    from streamops.sim.trades import TradeSimulator

_EXPORTS = {
    "AlphaSimulator": "streamops.sim.alpha",
    "BetaSimulator": "streamops.sim.beta",
    "create_app": "streamops.sim.beta",
    "Fleet": "streamops.sim.fleet",
    "Ping": "streamops.sim.fleet",
    "is_valid_vin": "streamops.sim.fleet",
    "JournalRecord": "streamops.sim.journal",
    "read_journal": "streamops.sim.journal",
    "valid_pings": "streamops.sim.journal",
    "TradeSimulator": "streamops.sim.trades",
}

__all__ = [
    "AlphaSimulator",
    "BetaSimulator",
    "Fleet",
    "JournalRecord",
    "Ping",
    "TradeSimulator",
    "create_app",
    "is_valid_vin",
    "read_journal",
    "valid_pings",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
