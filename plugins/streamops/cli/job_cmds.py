"""CLI verbs for jobs: ``submit``, ``jobs``, ``status``, ``cancel``."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from streamops.cli.queueing import add_wait
from streamops.cli.tables import Listing, console
from streamops.exceptions import ConfigError

if TYPE_CHECKING:
    from streamops.job_view import JobView
    from streamops.settings import Settings
    from streamops.spec import JobSpec
    from streamops.world.snapshot import Snapshot


def register(sub: Any) -> None:
    p = sub.add_parser("submit", help="run a job (spec YAML) as a supervised cluster driver")
    p.add_argument("spec", help="path of the job spec, e.g. config/jobs/fleet-pings.yaml")
    p.add_argument(
        "--arg", action="append", default=[], metavar="KEY=VALUE",
        help="override one of the spec's args (repeatable), e.g. --arg beta_url=http://h:8000/pings",
    )  # fmt: skip
    p.add_argument(
        "--wait", type=float, default=180.0, metavar="SECONDS",
        help="wait until every stage committed a batch (0: return once submitted)",
    )  # fmt: skip
    add_wait(p, as_wait=False)
    spare_flag(p)
    p.set_defaults(handler=cmd_submit)

    p = sub.add_parser("jobs", help="list jobs: version, state, driver, last batch age, rows/s")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(handler=cmd_jobs)

    p = sub.add_parser("status", help="print a job's status document")
    p.add_argument("name")
    p.set_defaults(handler=cmd_status)

    p = sub.add_parser(
        "cancel", help="stop a job now: kill every driver of it the master knows (no savepoint; "
        "its checkpoints stay)",
    )  # fmt: skip
    p.add_argument("name")
    add_wait(p)
    p.set_defaults(handler=cmd_cancel)


def now_flag(parser: argparse.ArgumentParser) -> None:
    """``--now``: stop the job(s) without waiting for a backlog their ``latency_slo`` says is
    too large (:mod:`streamops.procedures.backlog_gate`)."""
    parser.add_argument(
        "--now", action="store_true",
        help="go at once: do not wait for (or be refused by) the backlog of a job whose spec "
        "declares latency_slo",
    )  # fmt: skip


def spare_flag(parser: argparse.ArgumentParser) -> None:
    """``--allow-no-spare``: go on (with a warning) when the cluster would not hold every job
    after the loss of its largest worker (:mod:`streamops.admission`)."""
    parser.add_argument(
        "--allow-no-spare", action="store_true",
        help="go on, with a warning, when the cluster would not hold every job after the loss "
        "of its largest worker (N+1); refused otherwise",
    )  # fmt: skip


def cmd_submit(args: argparse.Namespace, settings: Settings) -> int:
    from streamops.admission import admit
    from streamops.procedures.deploy import start_job
    from streamops.spec import load_spec

    spec = with_args(load_spec(args.spec), args.arg)
    admit(settings, f"submit of {spec.name} v{spec.version}", specs=[spec],
          allow_no_spare=args.allow_no_spare)  # fmt: skip
    driver = start_job(settings, spec, wait_healthy=args.wait or None)
    console().print(f"job [bold]{spec.name}[/] v{spec.version} submitted as driver {driver}")
    return 0


def with_args(spec: JobSpec, overrides: list[str]) -> JobSpec:
    """``spec`` with ``KEY=VALUE`` overrides of its args (values parsed as YAML scalars)."""
    import yaml

    from streamops.spec import spec_from_dict

    updated = dict(spec.args)
    for item in overrides:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ConfigError(f"--arg {item!r}: expected KEY=VALUE")
        parsed = yaml.safe_load(value) if value else ""
        updated[key] = parsed if isinstance(parsed, str | int | float | bool) else value
    return spec_from_dict({**spec.model_dump(mode="json"), "args": updated}, "--arg")


def _fmt(value: float | None, unit: str = "") -> str:
    return "-" if value is None else f"{value:g}{unit}"


JOB_COLUMNS = ("name", "version", "state", "driver", "worker", "standby", "last batch",
               "in rows/s", "processed rows/s")  # fmt: skip


def jobs_table(views: list[JobView]) -> Listing:
    """One row per job; the worker by its node name with its address beside it."""
    from streamops.cluster.worker_names import worker_label

    table = Listing("jobs", JOB_COLUMNS, right=frozenset(JOB_COLUMNS[-2:]))
    for v in views:
        table.add(
            v.name, v.version or "-", v.state, v.driver_id or "-",
            worker_label(v.worker, v.worker_address), v.standby or "-",
            _fmt(v.last_batch_age, " s ago"), _fmt(v.input_rows_per_second),
            _fmt(v.processed_rows_per_second),
        )  # fmt: skip
    return table


def cmd_jobs(args: argparse.Namespace, settings: Settings) -> int:
    from streamops.world.snapshot import take

    snapshot = take(settings)  # the drivers may run on without the master: the state root tells
    views, note = snapshot.views, master_note(snapshot, settings)
    if args.json:
        fields = (
            "name", "version", "state", "is_live", "driver_id", "driver_state", "worker",
            "worker_address", "standby", "last_batch_age", "input_rows_per_second",
            "processed_rows_per_second",
        )  # fmt: skip
        print(json.dumps([{f: getattr(v, f) for f in fields} for v in views], indent=2))
        if note:
            print(note, file=sys.stderr)
    else:
        jobs_table(views).print()
        if note:
            console().print(note, markup=False)
    return 0


def master_note(snapshot: Snapshot, settings: Settings) -> str | None:
    """What a listing of a snapshot says under it when the master did not answer."""
    if snapshot.master_up:
        return None
    return (f"the Spark master did not answer ({snapshot.master_error}); the jobs are shown "
            f"from the state root {settings.state_root}: live while a driver keeps the job's "
            "lease fresh")  # fmt: skip


def cmd_status(args: argparse.Namespace, settings: Settings) -> int:
    from streamops.jobs import JobRegistry

    view = JobRegistry(settings).view(args.name)
    doc = {"state": view.state, "healthy": view.healthy, "standby": view.standby,
           **view.status.to_json()}  # fmt: skip
    print(json.dumps(doc, indent=2))
    return 0


def cmd_cancel(args: argparse.Namespace, settings: Settings) -> int:
    from streamops.procedures.entry_points import cancel_job

    killed = cancel_job(settings, args.name)
    noun = "driver" if len(killed) == 1 else "drivers"
    console().print(f"job [bold]{args.name}[/] cancelled (killed {noun} {', '.join(killed)})")
    return 0
