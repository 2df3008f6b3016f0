"""CLI verbs for savepoints of running jobs and upgrades: ``save-snapshot``, ``restore``,
``plan-upgrade``, ``upgrade``."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from streamops.cli.deferred import choice_of
from streamops.cli.job_cmds import now_flag, spare_flag
from streamops.cli.queueing import add_wait
from streamops.cli.tables import console, print_fields
from streamops.timeouts import HEALTH_TIMEOUT, REQUEST_TIMEOUT

if TYPE_CHECKING:
    from streamops.settings import Settings


def register(sub: Any) -> None:
    p = sub.add_parser("save-snapshot", help="savepoint a running job at a batch boundary")
    p.add_argument("job")
    p.add_argument("name", help="savepoint name (a-z, 0-9, '.', '_', '-')")
    p.add_argument("--cancel", action="store_true", help="stop the job once it is verified")
    p.add_argument("--timeout", type=float, default=REQUEST_TIMEOUT)
    add_wait(p)
    p.set_defaults(handler=cmd_save)

    p = sub.add_parser("restore", help="start a job spec from a savepoint (stages by name)")
    p.add_argument("spec")
    p.add_argument("savepoint")
    p.add_argument("--wait", type=float, default=HEALTH_TIMEOUT, help="health wait, seconds")
    add_wait(p, as_wait=False)
    spare_flag(p)
    p.set_defaults(handler=cmd_restore)

    for verb, fn, text in (
        ("plan-upgrade", cmd_plan, "dry run: what an upgrade would do with each stage"),
        ("upgrade", cmd_upgrade, "savepoint with cancel, start the new version, roll back"),
    ):
        p = sub.add_parser(verb, help=text)
        p.add_argument("job")
        p.add_argument("spec", help="the new version's job spec")
        p.add_argument("--allow-state-drop", action="store_true",
                       help="allow dropping (or renaming) stateful stages")  # fmt: skip
        if verb == "upgrade":
            p.add_argument("--savepoint", help="savepoint name (default: generated)")
            p.add_argument("--timeout", type=float, default=HEALTH_TIMEOUT,
                           help="health wait, seconds")
            p.add_argument(
                "--standby",
                type=choice_of("streamops.world.standby", "STANDBY_MODES", "auto"),
                default="auto", metavar="MODE",
                help="warm: start the new version's driver as a warm standby "
                "before stopping the old one (a gap of seconds; needs a free core for it); "
                "cold: after; auto (default): warm if a worker has a free core",
            )  # fmt: skip
            p.add_argument("--warm", action="store_const", dest="standby", const="warm",
                           help="same as --standby warm")  # fmt: skip
            add_wait(p)
            spare_flag(p)
            now_flag(p)
        p.set_defaults(handler=fn)


def cmd_save(args: argparse.Namespace, settings: Settings) -> int:
    from streamops.procedures.savepoint_taking import savepoint_job

    result = savepoint_job(settings, args.job, args.name, cancel=args.cancel,
                           timeout=args.timeout)  # fmt: skip
    said = f"{result.message} {result.detail}"
    console().print(f"savepoint [bold]{args.name}[/] of {args.job}: {said}")
    return 0


def cmd_restore(args: argparse.Namespace, settings: Settings) -> int:
    from streamops.admission import admit
    from streamops.describe_stages import describe_spec_stages
    from streamops.procedures.job_lease import job_operation
    from streamops.spec import load_spec
    from streamops.world.restore import start_from_savepoint

    spec = load_spec(args.spec)
    admit(settings, f"restore of {spec.name} v{spec.version} from {args.savepoint}",
          specs=[spec], allow_no_spare=args.allow_no_spare)  # fmt: skip
    with job_operation(settings, spec.name, f"restore v{spec.version} from {args.savepoint}"):
        stages = list(describe_spec_stages(spec, settings))
        driver = start_from_savepoint(spec, settings, args.savepoint, stages,
                                      wait_healthy=args.wait)  # fmt: skip
    console().print(
        f"job [bold]{spec.name}[/] v{spec.version} started from {args.savepoint}: {driver}"
    )
    return 0


def cmd_plan(args: argparse.Namespace, settings: Settings) -> int:
    from streamops.procedures.upgrade import plan_upgrade
    from streamops.spec import load_spec

    plan = plan_upgrade(settings, args.job, load_spec(args.spec),
                        allow_state_drop=args.allow_state_drop)  # fmt: skip
    console().print(plan.render(), markup=False)
    return 0 if plan.allowed else 1


def cmd_upgrade(args: argparse.Namespace, settings: Settings) -> int:
    from streamops.admission import admit
    from streamops.procedures.upgrade import upgrade
    from streamops.spec import load_spec

    spec = load_spec(args.spec)
    admit(settings, f"upgrade of {args.job} to v{spec.version}", specs=[spec],
          allow_no_spare=args.allow_no_spare)  # fmt: skip
    outcome = upgrade(settings, args.job, spec,
                      allow_state_drop=args.allow_state_drop, savepoint=args.savepoint,
                      health_timeout=args.timeout, standby=args.standby,
                      now=args.now)  # fmt: skip
    print_fields(f"job {outcome.job} upgraded", [
        ("version", f"v{outcome.from_version} → v{outcome.to_version}"),
        ("savepoint", outcome.savepoint),
        ("savepoint took", f"{outcome.savepoint_s} s"),
        ("start took", f"{outcome.start_s} s"),
        ("driver", outcome.driver_id),
    ])  # fmt: skip
    return 0
