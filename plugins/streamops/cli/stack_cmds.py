"""CLI verbs of the embedded local stack: ``up``, ``down``, ``vehicles``."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from streamops.cli.tables import Listing, console

if TYPE_CHECKING:
    from streamops.settings import Settings



def register(sub: Any) -> None:
    p = sub.add_parser(
        "up", help="start the local cluster, both simulators, the dashboard and the fleet-pings job"
    )
    p.add_argument("--spec", help="job spec to run (default: config/jobs/fleet-pings.yaml)")
    p.add_argument("--beta-port", type=int, default=8000, help="port of fleetsim-beta")
    p.add_argument("--rate", type=float, default=20.0, help="pings/s of each simulator")
    p.add_argument("--vehicles", type=int, default=50, help="vehicles of each simulator")
    p.add_argument("--wait", type=float, default=300.0, help="seconds to wait for health")
    p.add_argument("--no-airflow", action="store_true", help="do not start the embedded Airflow")
    p.set_defaults(handler=cmd_up)

    p = sub.add_parser("down", help="cancel jobs, stop the simulators and the local cluster")
    p.add_argument("--wait", type=float, default=0.0, metavar="SECONDS",
                   help="if a job is busy with an operation, wait up to SECONDS for it to "
                        "end (default 0: refused at once, nothing stopped)")
    p.add_argument("--force", action="store_true",
                   help="stop even while an operation holds a job (its intent stays, to be "
                        "resumed after `up`)")
    p.set_defaults(handler=cmd_down)

    p = sub.add_parser("vehicles", help="show the vehicles table (latest ping per VIN)")
    p.add_argument("--store-url", help="SQLAlchemy URL (default: the state root's SQLite file)")
    p.add_argument("--limit", type=int, default=20)
    p.set_defaults(handler=cmd_vehicles)


def cmd_up(args: argparse.Namespace, settings: Settings) -> int:
    from streamops.settings import PROJECT_ROOT
    from streamops.stack.local_stack import StackOptions, beta_url, job_lines, up

    spec = args.spec or PROJECT_ROOT / "config" / "jobs" / "fleet-pings.yaml"
    opts = StackOptions(
        spec=Path(spec), beta_port=args.beta_port, rate=args.rate,
        vehicles=args.vehicles, wait=args.wait, airflow=not args.no_airflow,
    )  # fmt: skip
    lines = job_lines(up(settings, opts))
    layout = settings.layout
    airflow = "" if args.no_airflow else _airflow_lines(settings)
    out = console()
    out.print()
    for running, line in lines or [(False, "no job is declared")]:
        out.print(f"{line}.", style="bold green" if running else "bold red", markup=False)
    out.print(
        f"  Spark master UI   {settings.webui_url}\n"
        f"  fleetsim-beta     {beta_url(settings, opts)}?since=0&limit=5\n"
        f"  fleetsim-alpha    {layout.alpha_dir}\n"
        f"  dashboard         {settings.dashboard_url}  (map, jobs, savepoints; /metrics)\n"
        f"  vehicles table    {layout.default_store_url}  (`streamops vehicles`)\n"
        f"  job status        {layout.status_file('fleet-pings')}  (`streamops jobs`)\n"
        f"  logs              {layout.logs_dir}, drivers under {layout.cluster_dir / 'work'}\n"
        f"{airflow}"
        "  health            `streamops health`, history `streamops health --history`\n"
        "  stop everything   `streamops down`"
    )
    return 0


def _airflow_lines(settings: Settings) -> str:
    from streamops.cli.airflow_cmds import login_lines
    from streamops.stack.airflow_stack import AirflowStack

    return login_lines(AirflowStack(settings)) + "\n"


def cmd_down(args: argparse.Namespace, settings: Settings) -> int:
    from streamops.stack.local_stack import down

    down(settings, wait=args.wait, force=args.force)
    console().print("local stack stopped")
    return 0


def vehicles_table(rows: list[Any], total: int) -> Listing:
    """The newest rows of the ``vehicles`` table (``total`` VINs in all)."""
    columns = ("vin", "source", "sequence", "latitude", "longitude", "speed", "heading")
    table = Listing(f"vehicles ({total} VINs, newest {len(rows)})", columns,
                    right=frozenset(columns[2:]))  # fmt: skip
    for r in rows:
        table.add(r.vin, r.source, str(r.sequence), f"{r.latitude:.5f}",
                  f"{r.longitude:.5f}", f"{r.speed:.1f}", f"{r.heading:.1f}")  # fmt: skip
    return table


def cmd_vehicles(args: argparse.Namespace, settings: Settings) -> int:
    from sqlalchemy import func, select

    from streamops_contract.sinks import store

    engine = store.engine_for(args.store_url or settings.layout.default_store_url, [store.vehicles])
    t = store.vehicles
    with engine.connect() as conn:
        total = conn.execute(select(func.count()).select_from(t)).scalar_one()
        rows = conn.execute(select(t).order_by(t.c.updated_at.desc()).limit(args.limit)).all()
    vehicles_table(rows, total).print()
    return 0
