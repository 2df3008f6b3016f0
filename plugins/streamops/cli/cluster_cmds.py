"""``streamops cluster start|stop|status|add-worker|remove-worker|train-classes|restart``:
the local Spark cluster.

The cluster's shape comes from ``<config>/cluster/local.yaml``; its host, ports and state
root from the settings (``STREAMOPS_*``). Other command modules reuse
:func:`local_cluster` and :func:`print_status`.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from streamops.cli.job_cmds import now_flag
from streamops.cli.tables import Listing

if TYPE_CHECKING:
    from rich.console import Console

    from streamops.cluster.profile import ClusterProfile
    from streamops.cluster.status import ClusterStatus, WorkerStatus
    from streamops.settings import Settings
    from streamops.stack.local_cluster import LocalCluster

WORKER_COLUMNS = ("worker", "address", "state", "cores", "memory MiB", "pid", "master id")


def local_cluster(settings: Settings, profile: ClusterProfile | None = None) -> LocalCluster:
    """The local cluster of ``settings``, shaped by ``<config_dir>/cluster/local.yaml``."""
    from streamops.cluster.profile import ClusterProfile
    from streamops.stack.local_cluster import LocalCluster

    if profile is None:
        profile = ClusterProfile.for_config_dir(settings.config_dir)
    return LocalCluster(settings, profile)


def _worker_state(worker: WorkerStatus, alive: set[str]) -> str:
    """The master's state; a gone worker whose node runs again says so."""
    if worker.state in ("DEAD", "DECOMMISSIONED") and worker.name in alive:
        return f"{worker.state} (earlier run)"
    return worker.state


def status_table(status: ClusterStatus) -> Listing:
    """One row per worker: running ones first, then those the master lists as DEAD or
    DECOMMISSIONED; the master in the title."""
    if status.master_alive:
        alive = f"{status.master_status} (pid {status.master_pid or '-'})"
    else:
        alive = "NOT RUNNING" + (f" (pid {status.master_pid})" if status.master_pid else "")
    table = Listing(
        f"master {status.master_url}: {alive}",
        WORKER_COLUMNS,
        caption=f"web UI {status.webui_url}, REST {status.rest_url}; "
        f"{len(status.apps)} app(s), {len(status.drivers)} driver(s)",
        right=frozenset({"cores", "memory MiB", "pid"}),
    )
    running = {w.name for w in status.workers if w.name and w.state == "ALIVE"}
    for w in (*status.workers, *status.gone):
        table.add(
            w.name or "(not ours)",
            w.address or "-",
            _worker_state(w, running),
            f"{w.coresused}/{w.cores}",
            f"{w.memoryused}/{w.memory}",
            str(w.pid) if w.pid else "-",
            w.id or "-",
        )
    return table


def drivers_table(status: ClusterStatus) -> Listing:
    """The master's active drivers, each on its worker's node name."""
    table = Listing("active drivers", ("driver", "state", "worker", "cores", "memory"),
                    right=frozenset({"cores", "memory"}))  # fmt: skip
    for d in status.drivers:
        worker = status.names.label(d.worker) if d.worker else "-"
        table.add(d.id, d.state, worker, str(d.cores), f"{d.memory} MiB")
    return table


def apps_table(status: ClusterStatus) -> Listing:
    """The master's active applications: a WAITING one has no executor yet (its cores wait)."""
    table = Listing("applications", ("application", "job", "state", "cores granted",
                                     "memory per executor"),
                    right=frozenset({"cores granted", "memory per executor"}))  # fmt: skip
    for a in status.apps:
        table.add(a.id, a.name, a.state, str(a.cores), f"{a.memoryperexecutor} MiB")
    return table


def print_status(status: ClusterStatus, out: Console | None = None) -> None:
    """Print the workers table and, if any, the active drivers and applications."""
    status_table(status).print(out)
    if status.drivers:
        drivers_table(status).print(out)
    if status.apps:
        apps_table(status).print(out)


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
        "restart", help="graceful restart switching the jar release (rolled back on failure): "
        "warm path = switch under the running daemons and hand every job over to a standby on "
        "it; full path = savepoint every job with cancel, stop, switch, start, restore")
    restart.add_argument("--release", required=True, help="jar release to switch to, e.g. r2")
    restart.add_argument("--path", choices=("auto", "warm", "full"), default="auto",
                         help="auto (default): warm while jobs run, full when none does; full: "
                         "also for a change the master and workers load themselves")
    now_flag(restart)
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
    supervised = supervision_table(settings)
    if supervised is not None:
        supervised.print()
    return 0 if status.master_alive else 1


def supervision_table(settings: Settings) -> Listing | None:
    """One row per node whose agent keeps a supervision record: whether its daemon is kept
    running, the supervisor's state, restarts in the window and the last thing it said."""
    import time

    from streamops.agent.registry import node_order, records
    from streamops.agent.supervision import read_all

    found = read_all(settings.layout)
    if not found:
        return None
    agents = records(settings.layout)
    now = time.time()
    table = Listing("daemon supervision (node agents restart a dead master/worker)",
                    ("node", "kept running", "state", "restarts", "last event"),
                    right=frozenset({"restarts"}))  # fmt: skip
    for node in sorted(found, key=node_order):
        r = found[node]
        agent = agents.get(node)
        state = r.state if agent is not None and agent.pid == r.agent_pid else (
            f"{r.state} (agent {r.agent_pid} gone)")
        table.add(node, f"{'yes' if r.keep_running else 'no'} ({r.reason})", state,
                  f"{len(r.recent(now))}/{r.limit} in {r.window / 60:g} min",
                  f"{time.strftime('%H:%M:%S', time.gmtime(r.last_at))} {r.last}" if r.last
                  else "-")
    return table


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
    from streamops.stack.class_training import train_class_archives

    print(train_class_archives(settings, force=args.force).describe())
    return 0


def run_restart(args: argparse.Namespace, settings: Settings) -> int:
    from streamops.procedures.cluster_restart import restart

    intent = restart(settings, args.release, path=args.path, now=args.now)
    moved = "handed over" if intent.path == "warm" else "restored"
    print(f"cluster restarted on jar release {intent.release_to} (was "
          f"{intent.release_from or 'none'}) by the {intent.path} path; jobs {moved}: "
          f"{', '.join(intent.restored) or 'none'}")
    return 0
