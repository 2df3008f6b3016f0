"""CLI verb ``restart``: restart a job gracefully (savepoint) or from its last checkpoint."""

from __future__ import annotations

import argparse
from typing import Any

from rich.console import Console

from streamops.restart import MODES
from streamops.settings import Settings

console = Console()


def register(sub: Any) -> None:
    p = sub.add_parser(
        "restart",
        help="restart a job: savepoint with cancel → start from it, or resubmit from checkpoints",
    )
    p.add_argument("job")
    p.add_argument(
        "--mode", choices=MODES, default="savepoint",
        help="savepoint: graceful (default); last-checkpoint: for a job too sick to savepoint",
    )  # fmt: skip
    p.add_argument("--savepoint", help="savepoint name (savepoint mode; default: generated)")
    p.add_argument("--timeout", type=float, default=300.0, help="health wait, seconds")
    p.set_defaults(handler=cmd_restart)


def cmd_restart(args: argparse.Namespace, settings: Settings) -> int:
    from streamops.restart import restart_job

    outcome = restart_job(settings, args.job, args.mode, savepoint=args.savepoint,
                          health_timeout=args.timeout)  # fmt: skip
    via = f"from savepoint {outcome.savepoint}" if outcome.savepoint else "from its checkpoints"
    console.print(
        f"job [bold]{outcome.job}[/] v{outcome.version} restarted {via} (stop {outcome.stop_s}s, "
        f"start {outcome.start_s}s), driver {outcome.driver_id}"
    )
    return 0
