"""``streamops agent`` (serve one node's agent) and ``streamops release list|switch``."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from streamops.cli.tables import Listing

if TYPE_CHECKING:
    from streamops.settings import Settings


def register(sub: Any) -> None:
    agent = sub.add_parser(
        "agent", help="run the node agent of one Spark node (HTTP, token-authenticated)"
    )
    agent.add_argument("--node", required=True, help="node served: master, worker-1, ...")
    agent.add_argument("--host", help="address to bind (default: this node's address, "
                       "STREAMOPS_NODE_HOST, else STREAMOPS_MASTER_HOST; loopback by default)")
    agent.add_argument("--port", type=int, default=0, help="port (default: any free port)")
    agent.add_argument("--token-file", help="bearer token file, created 0600 if missing "
                       "(default <state>/cluster/agent.token; STREAMOPS_AGENT_TOKEN wins)")
    agent.add_argument("--profile", help="cluster profile (YAML/JSON) sizing the daemon "
                       "(default <config>/cluster/local.yaml)")
    agent.add_argument("--start-daemon", action="store_true",
                       help="start this node's Spark daemon once the agent serves (containers)")
    agent.set_defaults(handler=run_agent)

    release = sub.add_parser("release", help="classpath jar releases of the cluster")
    verbs = release.add_subparsers(dest="release_command", required=True, metavar="VERB")
    verbs.add_parser("list", help="known releases and the active one").set_defaults(
        handler=run_release_list)
    switch = verbs.add_parser(
        "switch", help="switch the active release on every node (through the agents); "
        "running drivers keep the old jars until restarted (see `cluster restart`)")
    switch.add_argument("release", help="release name, e.g. r2")
    switch.set_defaults(handler=run_release_switch)


def run_agent(args: argparse.Namespace, settings: Settings) -> int:
    from streamops.agent.server import serve

    serve(settings, args.node, host=args.host, port=args.port, token_file=args.token_file,
          profile_file=args.profile, start_daemon=args.start_daemon)
    return 0


def releases_table(root: str, known: list[str], active: str | None) -> Listing:
    """The jar releases under ``root``, the active one starred."""
    table = Listing(f"jar releases under {root}", ("release", "active"))
    for name in known:
        table.add(name, "*" if name == active else "")
    return table


def run_release_list(args: argparse.Namespace, settings: Settings) -> int:
    from streamops.cluster.releases import ReleaseStore

    store = ReleaseStore(settings)
    releases_table(str(store.root), store.known(), store.active()).print()
    return 0


def run_release_switch(args: argparse.Namespace, settings: Settings) -> int:
    from streamops.agent.registry import Agents
    from streamops.world.cluster_nodes import switch_release_on_nodes

    switch_release_on_nodes(Agents(settings), args.release)
    print(f"active jar release: {args.release}")
    return 0
