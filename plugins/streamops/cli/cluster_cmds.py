"""``streamops cluster start|stop|status|add-worker|remove-worker|train-classes|restart``:
the local Spark cluster.

The cluster's shape comes from ``<config>/cluster/local.yaml``; its host, ports and state
root from the settings (``STREAMOPS_*``). Other command modules reuse
:func:`local_cluster` and :func:`print_status`.
"""

from __future__ import annotations

import argparse
from typing import Any

from rich.console import Console
from rich.table import Table

from streamops.cluster.local import LocalCluster
from streamops.cluster.profile import ClusterProfile
from streamops.cluster.status import ClusterStatus
from streamops.settings import Settings


def local_cluster(settings: Settings, profile: ClusterProfile | None = None) -> LocalCluster:
    """The local cluster of ``settings``, shaped by ``<config_dir>/cluster/local.yaml``."""
    if profile is None:
        profile = ClusterProfile.for_config_dir(settings.config_dir)
    return LocalCluster(settings, profile)


def status_table(status: ClusterStatus) -> Table:
    """A rich table: one row per worker, the master in the title."""
    if status.master_alive:
        alive = f"{status.master_status} (pid {status.master_pid or '-'})"
    else:
        alive = "NOT RUNNING" + (f" (pid {status.master_pid})" if status.master_pid else "")
    table = Table(
        title=f"master {status.master_url}: {alive}",
        caption=f"web UI {status.webui_url}, REST {status.rest_url}; "
        f"{len(status.apps)} app(s), {len(status.drivers)} driver(s)",
    )
    table.add_column("worker", no_wrap=True)
    table.add_column("id", overflow="fold")
    table.add_column("state", no_wrap=True)
    table.add_column("cores", justify="right", no_wrap=True)
    table.add_column("memory MiB", justify="right", no_wrap=True)
    table.add_column("pid", justify="right", no_wrap=True)
    for w in status.workers:
        table.add_row(
            w.name or "(not ours)",
            w.id or "-",
            w.state,
            f"{w.coresused}/{w.cores}",
            f"{w.memoryused}/{w.memory}",
            str(w.pid) if w.pid else "-",
        )
    return table


def print_status(status: ClusterStatus, console: Console | None = None) -> None:
    """Print the status table and, if any, the active drivers."""
    console = console or Console()
    console.print(status_table(status))
    if status.drivers:
        drivers = Table(title="active drivers")
        for column in ("driver", "state", "worker", "cores", "memory"):
            drivers.add_column(column)
        for d in status.drivers:
            drivers.add_row(d.id, d.state, d.worker or "-", str(d.cores), f"{d.memory} MiB")
        console.print(drivers)


def register(sub: Any) -> None:
    """Add the ``cluster`` command and its verbs to the ``streamops`` subparsers."""
    cluster = sub.add_parser("cluster", help="start, stop, scale and inspect the local cluster")
    verbs = cluster.add_subparsers(dest="cluster_command", required=True, metavar="VERB")

    start = verbs.add_parser("start", help="start the master and workers (idempotent)")
    start.add_argument("--workers", type=int, help="number of workers (default: profile)")
    start.set_defaults(handler=run_start)

    stop = verbs.add_parser("stop", help="stop workers, then the master; leave no JVM behind")
    stop.set_defaults(handler=run_stop)

    status = verbs.add_parser("status", help="master and workers as pid files and master see them")
    status.set_defaults(handler=run_status)

    add = verbs.add_parser("add-worker", help="start one more worker")
    add.add_argument("--name", help="worker name (default: next free worker-<i>)")
    add.set_defaults(handler=run_add_worker)

    remove = verbs.add_parser("remove-worker", help="decommission and stop one worker")
    remove.add_argument("name", help="worker name, e.g. worker-2")
    remove.add_argument("--force", action="store_true",
                        help="kill it at once instead of decommissioning it first")
    remove.set_defaults(handler=run_remove_worker)

    train = verbs.add_parser(
        "train-classes", help="train the class archives that shorten every job JVM's start "
        "(a minute's run of fleet-pings v2 on the cluster; again after a jar or JDK change)")
    train.add_argument("--force", action="store_true", help="train even if they exist")
    train.set_defaults(handler=run_train_classes)

    restart = verbs.add_parser(
        "restart", help="graceful full restart switching the jar release: savepoint every "
        "job with cancel, stop, switch, start, restore (rolled back on failure)")
    restart.add_argument("--release", required=True, help="jar release to switch to, e.g. r2")
    restart.set_defaults(handler=run_restart)


def run_start(args: argparse.Namespace, settings: Settings) -> int:
    print_status(local_cluster(settings).start(workers=args.workers))
    return 0


def run_stop(args: argparse.Namespace, settings: Settings) -> int:
    local_cluster(settings).stop()
    return 0


def run_status(args: argparse.Namespace, settings: Settings) -> int:
    status = local_cluster(settings).status()
    print_status(status)
    return 0 if status.master_alive else 1


def run_add_worker(args: argparse.Namespace, settings: Settings) -> int:
    cluster = local_cluster(settings)
    cluster.add_worker(name=args.name)
    print_status(cluster.status())
    return 0


def run_remove_worker(args: argparse.Namespace, settings: Settings) -> int:
    cluster = local_cluster(settings)
    cluster.remove_worker(args.name, graceful=not args.force)
    print_status(cluster.status())
    return 0


def run_train_classes(args: argparse.Namespace, settings: Settings) -> int:
    from streamops.class_training import train_class_archives

    print(train_class_archives(settings, force=args.force).describe())
    return 0


def run_restart(args: argparse.Namespace, settings: Settings) -> int:
    from streamops.cluster_restart import restart

    intent = restart(settings, args.release)
    print(f"cluster restarted on jar release {intent.release_to} (was "
          f"{intent.release_from or 'none'}); jobs restored: "
          f"{', '.join(intent.restored) or 'none'}")
    return 0
