"""CLI verbs for savepoints: ``list-snapshots``, ``delete-snapshot``, ``retain``.

The names follow Jet's ``jet.sh list-snapshots`` / ``delete-snapshot``; what they act on are
savepoints (``docs/mechanisms/savepoints-and-upgrades.md``).
"""

from __future__ import annotations

import argparse
import json
import re
from dataclasses import asdict
from datetime import datetime
from typing import TYPE_CHECKING, Any

from streamops.cli.tables import Listing, console
from streamops.exceptions import ConfigError

if TYPE_CHECKING:
    from streamops.settings import Settings
    from streamops_contract.state.savepoints.manifest import SavepointInfo

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_DURATION = re.compile(r"^(\d+(?:\.\d+)?)([smhdw])$")


def register(sub: Any) -> None:
    p = sub.add_parser("list-snapshots", help="list savepoints, newest first")
    p.add_argument("job", nargs="?", help="only the savepoints of this job")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(handler=cmd_list)

    p = sub.add_parser(
        "delete-snapshot", help="delete a savepoint (refused if a running job started from it)"
    )
    p.add_argument("name")
    p.set_defaults(handler=cmd_delete)

    p = sub.add_parser(
        "retain",
        help="delete old savepoints; the newest of each job and those running jobs were "
        "started from are always kept",
    )
    p.add_argument("--keep-last", type=int, metavar="N", help="keep the newest N of each job")
    p.add_argument("--max-age", metavar="AGE", help="delete older ones, e.g. 7d, 12h, 30m")
    p.add_argument("--dry-run", action="store_true", help="only say what would be deleted")
    p.set_defaults(handler=cmd_retain)


def human_bytes(n: int) -> str:
    """``812 B``, ``1.2 KiB``, ``3.4 MiB``..."""
    units = ("B", "KiB", "MiB", "GiB", "TiB")
    size, i = float(n), 0
    while size >= 1024 and i < len(units) - 1:
        size, i = size / 1024, i + 1
    return f"{n} B" if i == 0 else f"{size:.1f} {units[i]}"


def parse_duration(text: str) -> float:
    """Seconds of ``7d``, ``12h``, ``30m``, ``45s`` or ``2w``."""
    match = _DURATION.match(text.strip().lower())
    if not match:
        raise ConfigError(
            f"--max-age {text!r}: expected a number and a unit s, m, h, d or w, e.g. 7d, 12h, 30m"
        )
    return float(match.group(1)) * _UNITS[match.group(2)]


def _time(ts: float) -> str:
    return datetime.fromtimestamp(ts).isoformat(timespec="milliseconds")


def savepoints_table(infos: list[SavepointInfo]) -> Listing:
    """Newest first; the stages last, wrapping."""
    table = Listing("savepoints", ("TIME", "SIZE", "JOB", "NAME", "VERSION", "STAGES"),
                    right=frozenset({"SIZE"}))  # fmt: skip
    for i in infos:
        version = f"{i.version} ({i.code})" if i.code else i.version
        table.add(_time(i.created_at), human_bytes(i.bytes), i.job, i.name, version,
                  ", ".join(i.stages))  # fmt: skip
    return table


def cmd_list(args: argparse.Namespace, settings: Settings) -> int:
    from streamops.state.savepoints.catalogue import list_savepoints

    infos = list_savepoints(settings.layout, args.job)
    if args.json:
        rows = [{**asdict(i), "time": _time(i.created_at), "path": str(i.path)} for i in infos]
        print(json.dumps(rows, indent=2))
    elif not infos:
        whose = f" of job {args.job}" if args.job else ""
        console().print(f"no savepoints{whose} in {settings.layout.savepoints_dir}")
    else:
        savepoints_table(infos).print()
    return 0


def cmd_delete(args: argparse.Namespace, settings: Settings) -> int:
    from streamops.state.savepoints.catalogue import delete_savepoint, protected_savepoints

    layout = settings.layout
    delete_savepoint(layout, args.name, protected=protected_savepoints(layout))
    console().print(f"savepoint [bold]{args.name}[/] deleted")
    return 0


def cmd_retain(args: argparse.Namespace, settings: Settings) -> int:
    from streamops.state.savepoints.catalogue import (
        RetentionPolicy,
        apply_retention,
        protected_savepoints,
    )

    if args.keep_last is None and args.max_age is None:
        raise ConfigError("retain: give --keep-last N and/or --max-age AGE (e.g. 7d)")
    if args.keep_last is not None and args.keep_last < 1:
        raise ConfigError(f"--keep-last {args.keep_last}: keep at least 1")
    max_age = parse_duration(args.max_age) if args.max_age is not None else None
    policy = RetentionPolicy(keep_last=args.keep_last, max_age_s=max_age)
    layout = settings.layout
    protected = protected_savepoints(layout)
    names = apply_retention(layout, policy, protected=protected, dry_run=args.dry_run)
    out = console()
    if not names:
        out.print("retain: nothing to delete")
    else:
        verb = "would delete" if args.dry_run else "deleted"
        out.print(f"retain: {verb} {len(names)} savepoint(s): {', '.join(names)}")
    kept = sorted(protected)
    if kept:
        out.print(f"protected (running jobs were started from them): {', '.join(kept)}")
    return 0
