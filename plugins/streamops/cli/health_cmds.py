"""CLI verb ``health``: run the health checks (exit 1 when red) or show their history."""

from __future__ import annotations

import argparse
import json
from datetime import datetime
from typing import TYPE_CHECKING, Any

from streamops.cli.tables import Listing, console, styled

if TYPE_CHECKING:
    from rich.console import Console

    from streamops.settings import Settings

_STYLE = {"ok": "green", "warn": "yellow", "fail": "bold red"}


def register(sub: Any) -> None:
    p = sub.add_parser(
        "health",
        help="check the cluster and its jobs (exit 1 when a check fails) or show the history",
    )
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument(
        "--history",
        nargs="?",
        type=int,
        const=20,
        metavar="N",
        help="show the last N recorded runs (default 20) instead of checking",
    )
    p.add_argument(
        "--job",
        action="append",
        dest="jobs",
        metavar="NAME",
        help="check only this job (repeatable; default: every declared job)",
    )
    p.add_argument("--no-record", action="store_true", help="do not append to the history")
    p.add_argument("--expected-workers", type=int, help="ALIVE workers expected")
    p.add_argument("--max-batch-age", type=float, help="seconds a busy stage may not commit")
    p.add_argument("--max-sink-age", type=float, help="seconds a store may go unwritten")
    p.add_argument("--max-core-wait", type=float,
                   help="seconds a job may wait for its executors' cores before it fails "
                   "(default: the failover goal, 15)")  # fmt: skip
    p.set_defaults(handler=cmd_health)


def cmd_health(args: argparse.Namespace, settings: Settings) -> int:
    from streamops.health import checks as health

    if args.history is not None:
        print_history(health.read_history(settings.layout, args.history))
        return 0
    overrides = {
        "expected_workers": args.expected_workers,
        "max_batch_age": args.max_batch_age,
        "max_sink_age": args.max_sink_age,
        "max_core_wait": args.max_core_wait,
    }
    thresholds = health.Thresholds(**{k: v for k, v in overrides.items() if v is not None})
    report = health.run_checks(settings, thresholds, jobs=args.jobs)
    if not args.no_record:
        health.record(settings.layout, report, source="cli")
    if args.json:
        print(json.dumps(report.to_json(), indent=2))
    else:
        print_report(report)
    return 0 if report.ok else 1


def report_table(report: Any) -> Listing:
    """One row per check; the message last, wrapping."""
    table = Listing(f"health at {_when(report.at)}: {report.level.value.upper()}",
                    ("group", "check", "level", "message"))  # fmt: skip
    for r in report.results:
        level = r.level.value
        table.add(r.group, r.name, styled(level, _STYLE[level]), r.message)
    return table


def print_report(report: Any, out: Console | None = None) -> None:
    report_table(report).print(out)


def history_table(records: list[dict[str, Any]]) -> Listing:
    """One row per recorded run, oldest first; its summary last, wrapping."""
    table = Listing(f"health history (last {len(records)} runs, oldest first)",
                    ("time", "by", "level", "failed / warned", "summary"))  # fmt: skip
    for rec in records:
        level = str(rec.get("level", "?"))
        counts = [r.get("level") for r in rec.get("results") or []]
        table.add(
            _when(float(rec.get("at") or 0)),
            str(rec.get("source", "")),
            styled(level, _STYLE.get(level, "")),
            f"{counts.count('fail')} / {counts.count('warn')}",
            str(rec.get("summary", "")),
        )
    return table


def print_history(records: list[dict[str, Any]], out: Console | None = None) -> None:
    if not records:
        (out or console()).print("no health check has been recorded yet (run `streamops health`)")
        return
    history_table(records).print(out)


def _when(at: float) -> str:
    return datetime.fromtimestamp(at).astimezone().strftime("%Y-%m-%d %H:%M:%S %Z")
