"""``streamops scale --workers N | --add NAME | --remove NAME``: rolling scale via agents."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from streamops.cli.tables import console, print_fields

if TYPE_CHECKING:
    from streamops.settings import Settings


def register(sub: Any) -> None:
    scale = sub.add_parser(
        "scale", help="scale the cluster's workers through the node agents; running jobs "
        "keep committing batches (verified)")
    what = scale.add_mutually_exclusive_group(required=True)
    what.add_argument("--workers", type=int, help="target number of ALIVE workers (>= 1)")
    what.add_argument("--add", metavar="NAME", help="start the worker of node NAME")
    what.add_argument("--remove", metavar="NAME", help="gracefully decommission worker NAME")
    scale.add_argument("--no-verify", action="store_true",
                       help="do not wait for the running jobs to commit new batches")
    scale.set_defaults(handler=run_scale)


def run_scale(args: argparse.Namespace, settings: Settings) -> int:
    from streamops.exceptions import StreamopsError
    from streamops.procedures import scale

    owner = scale.CLI_OWNER
    target = scale.target_workers(settings, workers=args.workers, add=args.add,
                                  remove=args.remove)  # fmt: skip
    before = scale.batch_marks(settings)
    scale.begin(settings, owner, target)  # an interrupted scale shows in `streamops health`
    try:
        if args.workers is not None:
            result = scale.scale_to(settings, args.workers)
        elif args.add:
            result = scale.add_worker(settings, args.add)
        else:
            result = scale.remove_worker(settings, args.remove)
        scale.workers_changed(settings, owner)  # health expects this many workers from now on
        print_fields("scaled", [
            ("started", ", ".join(result.started) or "none"),
            ("removed", ", ".join(result.removed) or "none"),
            ("running", f"{', '.join(result.running) or 'none'} ({len(result.running)} workers)"),
        ])  # fmt: skip
        if not args.no_verify:
            scale.verify_batches_continue(settings, before)
            scale.step_done(settings, owner, "verify_batches_continue")
            for job in scale.rebalance_candidates(settings):
                console().print(f"job {job} cannot use the free cores; rebalancing it")
                scale.rebalance(settings, job)
            scale.step_done(settings, owner, "rebalance")
    except StreamopsError as exc:
        scale.record_failure(settings, owner, f"{type(exc).__name__}: {exc}")
        raise
    scale.finish(settings, owner)
    return 0
