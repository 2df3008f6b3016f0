"""CLI verb ``dashboard``: the read-only web dashboard and ``/metrics`` in the foreground
(``streamops up`` starts the same command as a background service)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from streamops.settings import Settings


def register(sub: Any) -> None:
    p = sub.add_parser(
        "dashboard", help="serve the map, jobs, savepoints, health and /metrics (read-only)"
    )
    p.add_argument("--host", help="address to bind (default: STREAMOPS_DASHBOARD_HOST, "
                   "else loopback)")
    p.add_argument("--port", type=int, help="port (default: STREAMOPS_DASHBOARD_PORT or 8050)")
    p.add_argument("--store-url", help="SQLAlchemy URL (default: the state root's SQLite file)")
    p.set_defaults(handler=cmd_dashboard)


def cmd_dashboard(args: argparse.Namespace, settings: Settings) -> int:
    from streamops.dashboard.app import serve

    serve(settings, host=args.host, port=args.port, store_url=args.store_url)
    return 0
