"""CLI verbs ``airflow start|stop|status``: the embedded Airflow of the local stack."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from streamops.cli.tables import Listing, console

if TYPE_CHECKING:
    from streamops.settings import Settings


def register(sub: Any) -> None:
    p = sub.add_parser("airflow", help="the embedded Airflow (api-server, scheduler, ...)")
    verbs = p.add_subparsers(dest="airflow_command", required=True, metavar="VERB")
    start = verbs.add_parser("start", help="start Airflow beside the local cluster")
    start.add_argument("--port", type=int, help="api-server port (STREAMOPS_AIRFLOW_PORT)")
    start.set_defaults(handler=cmd_start)
    verbs.add_parser("stop", help="stop every Airflow process").set_defaults(handler=cmd_stop)
    status = verbs.add_parser("status", help="processes, health, where the UI is, the login")
    status.set_defaults(handler=cmd_status)


def _stack(settings: Settings, port: int | None = None) -> Any:
    from streamops.stack.airflow_stack import AirflowOptions, AirflowStack

    return AirflowStack(settings, AirflowOptions.from_env(port=port))


def login_lines(stack: Any) -> str:
    """Where the UI is and how to log in (printed by ``up`` and ``airflow start|status``)."""
    return (
        f"  Airflow UI        {stack.options.url}\n"
        f"  Airflow login     user admin, password in {stack.password_file}\n"
        "                    (or the STREAMOPS_AIRFLOW_PASSWORD you set; never printed)\n"
        f"  Airflow database  {stack.database.state()}"
    )


def cmd_start(args: argparse.Namespace, settings: Settings) -> int:
    stack = _stack(settings, args.port)
    stack.start()
    console().print("[bold green]Airflow is running.[/]\n" + login_lines(stack))
    return 0


def cmd_stop(args: argparse.Namespace, settings: Settings) -> int:
    stopped = _stack(settings).stop()
    said = f"stopped {', '.join(stopped)}" if stopped else "no Airflow process was running"
    console().print(said)
    return 0


def status_table(url: str, rows: list[Any]) -> Listing:
    """One row per Airflow component: its pid and health."""
    table = Listing(f"Airflow at {url}", ("component", "pid", "health"), right=frozenset({"pid"}))
    for row in rows:
        table.add(row.component, str(row.pid or "-"), row.health or "-")
    return table


def cmd_status(args: argparse.Namespace, settings: Settings) -> int:
    stack = _stack(settings)
    rows = stack.status()
    status_table(stack.options.url, rows).print()
    if all(r.pid for r in rows):
        console().print(login_lines(stack))
        return 0
    return 1
