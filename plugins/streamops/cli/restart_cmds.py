"""CLI verb ``restart``: restart a job gracefully (savepoint) or from its last checkpoint."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from streamops.cli.deferred import choice_of
from streamops.cli.job_cmds import now_flag
from streamops.cli.queueing import add_wait
from streamops.cli.tables import print_fields
from streamops.timeouts import HEALTH_TIMEOUT

if TYPE_CHECKING:
    from streamops.settings import Settings


def register(sub: Any) -> None:
    p = sub.add_parser(
        "restart",
        help="restart a job: savepoint with cancel → start from it, or resubmit from checkpoints",
    )
    p.add_argument("job")
    p.add_argument(
        "--mode", type=choice_of("streamops.procedures.restart", "MODES", "savepoint"),
        default="savepoint", metavar="MODE", help="savepoint: graceful (default); last-checkpoint: "
        "for a job too sick to savepoint",
    )  # fmt: skip
    p.add_argument("--savepoint", help="savepoint name (savepoint mode; default: generated)")
    p.add_argument("--timeout", type=float, default=HEALTH_TIMEOUT, help="health wait, seconds")
    add_wait(p)
    now_flag(p)
    p.set_defaults(handler=cmd_restart)


def cmd_restart(args: argparse.Namespace, settings: Settings) -> int:
    from streamops.procedures.restart import restart_job

    outcome = restart_job(settings, args.job, args.mode, savepoint=args.savepoint,
                          health_timeout=args.timeout, now=args.now)  # fmt: skip
    print_fields(f"job {outcome.job} restarted", [
        ("version", outcome.version),
        ("from", f"savepoint {outcome.savepoint}" if outcome.savepoint else "its checkpoints"),
        ("stop", f"{outcome.stop_s} s"),
        ("start", f"{outcome.start_s} s"),
        ("driver", outcome.driver_id),
    ])  # fmt: skip
    return 0
