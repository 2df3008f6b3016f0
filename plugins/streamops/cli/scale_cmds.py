"""``streamops scale --workers N | --add NAME | --remove NAME``: rolling scale via agents."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from streamops.cli.job_cmds import spare_flag
from streamops.cli.queueing import add_wait
from streamops.cli.tables import print_fields

if TYPE_CHECKING:
    from streamops.settings import Settings
    from streamops.world.operations import Operations


def register(sub: Any) -> None:
    scale = sub.add_parser(
        "scale", help="scale the cluster's workers through the node agents; running jobs "
        "keep committing batches (verified)")
    what = scale.add_mutually_exclusive_group(required=True)
    what.add_argument("--workers", type=int, help="target number of ALIVE workers (>= 1)")
    what.add_argument("--add", metavar="NAME", help="start the worker of node NAME")
    what.add_argument("--remove", metavar="NAME", help="gracefully decommission worker NAME")
    what.add_argument("--advise", metavar="JOB", help="change nothing: the workers and state "
                      "partitions JOB needs for a 0.7 utilization and a 30 min catch-up "
                      "(Flink's autoscaler formula), with its terms")
    scale.add_argument("--no-verify", action="store_true",
                       help="do not wait for the running jobs to commit new batches")
    add_wait(scale)
    spare_flag(scale)
    scale.set_defaults(handler=run_scale)


def run_scale(args: argparse.Namespace, settings: Settings) -> int:
    from streamops.admission import admit
    from streamops.procedures.scale import scale

    if getattr(args, "advise", None):
        return run_advise(args.advise, settings)

    if args.remove or args.workers is not None:  # a scale-up needs no admission
        what = f"removing worker {args.remove}" if args.remove else f"scale to {args.workers}"
        admit(settings, what, remove=[args.remove] if args.remove else [],
              workers=args.workers,
              allow_no_spare=getattr(args, "allow_no_spare", False))  # fmt: skip
    result = scale(settings, workers=args.workers, add=args.add, remove=args.remove,
                   verify=not args.no_verify)  # fmt: skip
    print_fields("scaled", [
        ("started", ", ".join(result.started) or "none"),
        ("removed", ", ".join(result.removed) or "none"),
        ("running", f"{', '.join(result.running) or 'none'} ({len(result.running)} workers)"),
    ])  # fmt: skip
    return 0


def run_advise(job: str, settings: Settings | Operations) -> int:
    """Print the sizing advice for ``job``; nothing changes."""
    from streamops.procedures.backlog_gate import scale_advice
    from streamops.world.port import operations

    print(f"scale advice for {job}:")
    for line in scale_advice(operations(settings), job):
        print(f"  {line}")
    return 0
