"""A fleetsim-beta that emitted a fixed number of records, serving them (unit tests)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import requests

from streamops.sim.beta import BetaSimulator


@contextmanager
def beta_serving(pings: int, history: int) -> Iterator[BetaSimulator]:
    """A real fleetsim-beta on a free loopback port that emitted ``pings`` records and holds
    the last ``history`` of them; stopped on exit."""
    sim = BetaSimulator(port=0, rate=100_000, max_pings=pings, history=history)
    sim.start()
    try:
        assert sim.wait_done(30)
        yield sim
    finally:
        sim.stop()


def stream_of(sim: BetaSimulator) -> str | None:
    """The stream identity the simulator serves (``GET /head``)."""
    return requests.get(f"{sim.base_url}/head", timeout=5).json().get("stream")
