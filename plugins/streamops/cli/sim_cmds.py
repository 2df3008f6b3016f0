"""``streamops sim alpha|beta|trades|transactions`` (a simulator in the foreground) and
``streamops sim start|stop|status`` (simulators in the background, as services of the state root).

In the foreground a simulator runs until Ctrl-C, SIGTERM or ``--max-pings``, logging progress
every ``--progress-every`` seconds; ``python -m streamops.sim.alpha`` / ``.beta`` / ``.trades``
do the same. ``sim start SIM [flags]`` runs the same command in the background (pid file and
log under the state root, see :mod:`streamops.sim.background`); the flags are those of the
foreground verb. The flags live in :mod:`streamops.sim.flags` and the handlers beside each
simulator, imported when the verb runs.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from streamops.cli.deferred import handler
from streamops.cli.tables import Listing, console
from streamops.sim import flags

if TYPE_CHECKING:
    from streamops.settings import Settings
    from streamops.sim.background import SimStatus

SIMULATORS = ("alpha", "beta", "trades", "transactions")


def register(sub: Any) -> None:
    """Add the ``sim`` command and its verbs to the ``streamops`` subparsers."""
    sim = sub.add_parser(
        "sim", help="run a simulator (fleetsim-alpha, fleetsim-beta, trades, transactions) in the "
        "foreground, "
        "or start, stop and watch them in the background")  # fmt: skip
    verbs = sim.add_subparsers(dest="sim_command", required=True, metavar="VERB")
    for name, text, add in (
        ("alpha", "write ping CSV files into a directory", flags.add_alpha_arguments),
        ("beta", "serve pings over HTTP: GET /pings?since=N&limit=M", flags.add_beta_arguments),
        ("trades", "serve trades over HTTP with beta's log server (the trade analyser's input)",
         flags.add_trades_arguments),
        ("transactions", "insert and update transactions in a table with an event journal "
         "(the transactions jobs' input)", flags.add_transactions_arguments),
    ):  # fmt: skip
        parser = verbs.add_parser(name, help=f"{text} (foreground)")
        add(parser)
        parser.set_defaults(handler=handler(f"streamops.sim.{name}", "run_from_args"))

    start = verbs.add_parser(
        "start", help="start a simulator in the background (pid file and log under the state "
        "root); `streamops sim SIM --help` lists its flags",
        description="Start SIM in the background with the flags of `streamops sim SIM` "
        "(beta and trades keep their log under <state>/data/SIM unless --data-dir is given). "
        "Returns once it serves (beta, trades) or writes (alpha).")  # fmt: skip
    start.add_argument("sim", choices=SIMULATORS, help="the simulator")
    start.add_argument("options", nargs=argparse.REMAINDER, metavar="FLAGS",
                       help="flags of `streamops sim SIM`, e.g. --port 8001 --rate 50")
    start.set_defaults(handler=cmd_start)

    stop = verbs.add_parser(
        "stop", help="stop background simulators: SIGTERM, up to 10 s, then SIGKILL")
    stop.add_argument("sims", nargs="*", metavar="SIM",
                      help="alpha, beta, trades or transactions (default: every one)")
    stop.set_defaults(handler=cmd_stop)

    status = verbs.add_parser(
        "status", help="running or stopped, pid, port and records emitted of each simulator")
    status.add_argument("--json", action="store_true", help="machine-readable output")
    status.set_defaults(handler=cmd_status)


def status_table(found: list[SimStatus]) -> Listing:
    table = Listing("simulators", ("simulator", "state", "pid", "port", "emitted", "log"),
                    right=frozenset({"pid", "port", "emitted"}))  # fmt: skip
    for s in found:
        table.add(s.service, "running" if s.running else "stopped", str(s.pid or "-"),
                  str(s.port or "-"), "-" if s.emitted is None else str(s.emitted), str(s.log))
    return table


def cmd_start(args: argparse.Namespace, settings: Settings) -> int:
    from streamops.sim import background

    found, started = background.start(settings, args.sim, args.options)
    where = f" on {found.url}" if found.url else ""
    verb = "started" if started else "already running"
    console().print(f"{found.service} {verb} (pid {found.pid}){where}; log {found.log}")
    return 0


def cmd_stop(args: argparse.Namespace, settings: Settings) -> int:
    from streamops.sim import background

    stopped = background.stop(settings, args.sims or None)
    console().print(f"stopped {', '.join(stopped)}" if stopped else "no simulator was running")
    return 0


def cmd_status(args: argparse.Namespace, settings: Settings) -> int:
    import json
    from dataclasses import asdict

    from streamops.sim import background

    found = background.status(settings)
    if args.json:
        rows = [{**asdict(s), "log": str(s.log), "running": s.running} for s in found]
        print(json.dumps(rows, indent=2))
    else:
        status_table(found).print()
    return 0
