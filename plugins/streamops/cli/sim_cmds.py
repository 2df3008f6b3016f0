"""``streamops sim alpha|beta|trades``: run a fleet simulator in the foreground.

Runs until Ctrl-C, SIGTERM or ``--max-pings``, logging progress every ``--progress-every``
seconds. The same verbs are available as ``python -m streamops.sim.alpha`` / ``.beta``: each
simulator module holds its flags and handler (and :mod:`streamops.sim.runner` the foreground
run), so this module only registers them.
"""

from __future__ import annotations

from typing import Any

from streamops.sim import alpha as sim_alpha
from streamops.sim import beta as sim_beta
from streamops.sim import trades as sim_trades


def register(sub: Any) -> None:
    """Add the ``sim`` command (``alpha``, ``beta``) to the ``streamops`` subparsers."""
    sim = sub.add_parser("sim", help="run a fleet simulator (fleetsim-alpha, fleetsim-beta)")
    verbs = sim.add_subparsers(dest="sim_command", required=True, metavar="SIMULATOR")
    alpha = verbs.add_parser("alpha", help="write ping CSV files into a directory")
    sim_alpha.add_arguments(alpha)
    alpha.set_defaults(handler=sim_alpha.run_from_args)
    beta = verbs.add_parser("beta", help="serve pings over HTTP: GET /pings?since=N&limit=M")
    sim_beta.add_arguments(beta)
    beta.set_defaults(handler=sim_beta.run_from_args)
    trades = verbs.add_parser(
        "trades", help="serve trades over HTTP with beta's log server (the trade analyser's input)"
    )
    sim_trades.add_arguments(trades)
    trades.set_defaults(handler=sim_trades.run_from_args)
