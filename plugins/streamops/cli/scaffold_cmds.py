"""CLI verb ``new-job``: scaffold a job of one's own (:mod:`streamops.scaffold`)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from streamops.settings import Settings


def register(sub: Any) -> None:
    p = sub.add_parser(
        "new-job", help="write a new job (code, spec, deployment, test) into a folder")
    p.add_argument("name", help="the job's name, e.g. clicks")
    p.add_argument("--dir", help="where (default: ./NAME)")
    p.add_argument("--force", action="store_true", help="overwrite files that exist")
    p.set_defaults(handler=cmd_new_job)


def cmd_new_job(args: argparse.Namespace, settings: Settings) -> int:
    from streamops import scaffold

    folder = Path(args.dir or args.name).resolve()
    written = scaffold.create(args.name, folder, force=args.force)
    for path in written:
        print(f"wrote {path}")
    print(f"\nnext: its test   python -m pytest {folder}\n"
          f"      run it      streamops submit {folder / (args.name + '.yaml')}\n"
          f"      or declare  streamops apply -f {folder / (args.name + '-deployment.yaml')}\n"
          "      writing a job: docs/jobs.md")  # fmt: skip
    return 0
