"""The ``streamops`` command line: every operation of the project from a terminal.

Each group of verbs lives in its own module and registers its sub-commands here. Building
the parser imports no heavy library (see :mod:`streamops.cli.deferred`): ``--help`` answers
at once, and a verb imports what it needs when it runs. Tables go through
:mod:`streamops.cli.tables`, which fits them to the terminal's width.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from streamops.exceptions import StreamopsError


def build_parser() -> argparse.ArgumentParser:
    from streamops.cli import (
        agent_cmds,
        airflow_cmds,
        cluster_cmds,
        dashboard_cmds,
        declarative_cmds,
        health_cmds,
        job_cmds,
        restart_cmds,
        savepoint_cmds,
        scaffold_cmds,
        scale_cmds,
        sim_cmds,
        stack_cmds,
        upgrade_cmds,
    )

    parser = argparse.ArgumentParser(
        prog="streamops",
        description="Operate long-running Spark Structured Streaming jobs.",
    )
    parser.add_argument("--state-root", help="state root directory (STREAMOPS_STATE_ROOT)")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    cluster_cmds.register(sub)
    job_cmds.register(sub)
    sim_cmds.register(sub)
    stack_cmds.register(sub)
    savepoint_cmds.register(sub)
    upgrade_cmds.register(sub)
    health_cmds.register(sub)
    airflow_cmds.register(sub)
    agent_cmds.register(sub)
    scale_cmds.register(sub)
    restart_cmds.register(sub)
    dashboard_cmds.register(sub)
    declarative_cmds.register(sub)
    scaffold_cmds.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    try:
        from streamops.cli.queueing import refuse_if_busy
        from streamops.procedures.job_lease import acting_as
        from streamops.settings import Settings

        settings = Settings.from_env(state_root=args.state_root)
        refuse_if_busy(args, settings)
        with acting_as("cli", wait=getattr(args, "lease_wait", 0.0)):
            return int(args.handler(args, settings) or 0)
    except StreamopsError as exc:
        from streamops.cli.queueing import summarised

        logging.getLogger("streamops.cli").debug("the whole error: %s", exc)
        print(f"error: {summarised(str(exc))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
