"""What runs beside a benchmark's cluster: the rest of the stack ``streamops up`` starts.

Users run ``./scripts/up.sh`` (``streamops up``): beside the cluster and the simulators, the
embedded Airflow (its PostgreSQL, api-server, scheduler, dag-processor and triggerer; the
scheduled DAGs, health checks every 5 minutes and the declarative reconcile every minute, run
against the same state root), the dashboard and the describe-ahead service. A benchmark runs
beside them by default, so that its figures are those of the machine a user has; ``--bare``
(:func:`add_stack_args`) leaves them out, for the figures taken before.

:func:`beside_stack` starts them on the benchmark's state root once its cluster is up (Airflow
and describe-ahead need the master), waits until Airflow reports every component healthy,
says what runs beside and how long it took to start, and on exit stops them all and checks
that none of their processes is left. Nothing collides with a user's stack on the same
machine: the api-server and Airflow's two log servers listen on free ports, the dashboard on
the settings' (free, :func:`harness.bench_cluster`), and the embedded PostgreSQL listens on no
TCP port at all, on a Unix socket in its data directory under the state root (or, for a path
too long for a socket, in a directory named by a hash of that path).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

from harness import free_port

from streamops import describe_ahead
from streamops.services import running_service, start_service, stop_services
from streamops.settings import Settings
from streamops.stack.airflow_db import EMBEDDED, SQLITE
from streamops.stack.airflow_stack import COMPONENTS, AirflowOptions, AirflowStack
from streamops.stack.local_stack import dashboard_command

DASHBOARD = "dashboard"
SERVICES = (DASHBOARD, describe_ahead.SERVICE)
BARE = "bare: nothing beside the cluster and the simulators"


def add_stack_args(ap: argparse.ArgumentParser) -> None:
    """The ``--bare`` flag every benchmark takes."""
    ap.add_argument(
        "--bare", action="store_true",
        help="run nothing beside the cluster and the simulators (as the benchmarks ran "
             "before this flag); default: beside the stack `streamops up` starts (the embedded "
             "Airflow with its PostgreSQL and scheduled DAGs, the dashboard, describe-ahead) "
             "on the benchmark's state root",
    )  # fmt: skip


class BenchAirflow(AirflowStack):
    """The stack's Airflow, with its two log servers (the scheduler's, 8793, and the
    triggerer's, 8794, by default) on free ports, beside a user's Airflow on the defaults."""

    def __init__(self, settings: Settings, options: AirflowOptions) -> None:
        super().__init__(settings, options)
        self.log_ports = {
            "AIRFLOW__LOGGING__WORKER_LOG_SERVER_PORT": str(free_port()),
            "AIRFLOW__LOGGING__TRIGGER_LOG_SERVER_PORT": str(free_port()),
        }

    def env(self) -> dict[str, str]:
        return {**super().env(), **self.log_ports}


def airflow_options() -> AirflowOptions:
    """The stack's options on a free api-server port. The metadata database is the embedded
    PostgreSQL of the state root (or SQLite when ``STREAMOPS_AIRFLOW_DB=sqlite``), never a
    server of the user's (``STREAMOPS_AIRFLOW_DB`` a URL): the benchmark would migrate and run
    its scheduler in the user's Airflow database."""
    options = AirflowOptions.from_env(port=free_port(), start_timeout=600.0)
    if options.database not in (EMBEDDED, SQLITE):
        raise SystemExit(
            "STREAMOPS_AIRFLOW_DB names a PostgreSQL server of your own; a benchmark runs its "
            "own Airflow database: unset it, or give sqlite"
        )
    return options


@contextlib.contextmanager
def beside_stack(settings: Settings, bare: bool) -> Iterator[None]:
    """Unless ``bare``, the dashboard, Airflow and describe-ahead on ``settings`` (whose
    cluster is up) for the block, in ``streamops up``'s order; Airflow healthy before the
    block starts. Everything stopped after it, and checked gone."""
    if bare:
        print(BARE, flush=True)
        yield
        return
    t0 = time.monotonic()
    airflow = BenchAirflow(settings, airflow_options())
    try:
        start_service(settings, DASHBOARD, dashboard_command(settings), env=settings.to_env())
        airflow.launch()
        start_service(settings, describe_ahead.SERVICE, describe_ahead.command(settings),
                      env=settings.to_env())  # fmt: skip
        airflow.wait_ready()
        count = len(COMPONENTS) + (airflow.options.database == EMBEDDED)
        took = time.monotonic() - t0
        print(f"beside: Airflow ({count} processes), dashboard, describe-ahead; up in "
              f"{took:.1f} s (Airflow {airflow.options.url})", flush=True)  # fmt: skip
        yield
    finally:
        stop_stack(settings, airflow)


def stop_stack(settings: Settings, airflow: AirflowStack) -> None:
    """Stop Airflow (then its PostgreSQL) and the two services; end and name whatever of
    theirs still runs."""
    t0 = time.monotonic()
    airflow.stop()
    stop_services(settings, SERVICES)  # only these: a benchmark's simulators are its own
    left = leftovers(settings, airflow)
    for pid in left:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    took = f"stopped in {time.monotonic() - t0:.1f} s"
    if left:
        print(f"beside stack {took}, but {len(left)} of its processes ran on and were "
              f"killed: {', '.join(map(str, sorted(left)))}", flush=True)  # fmt: skip
    else:
        print(f"beside stack {took}; no Airflow, PostgreSQL or service process of "
              f"{settings.state_root} left", flush=True)  # fmt: skip


def leftovers(settings: Settings, airflow: AirflowStack, wait: float = 10.0) -> list[int]:
    """Pids still running of the beside stack of ``settings``' state root: a process whose
    environment has its ``AIRFLOW_HOME`` (Airflow's processes and their children) or whose
    command line names its Airflow home (PostgreSQL's postmaster), the services' pids;
    waited for up to ``wait`` seconds to go."""
    deadline = time.monotonic() + wait
    while True:
        found = _stack_pids(settings, airflow.home)
        if not found or time.monotonic() >= deadline:
            return found
        time.sleep(0.5)


def _stack_pids(settings: Settings, home: Path) -> list[int]:
    marker = f"AIRFLOW_HOME={home}".encode()
    found = {r.pid for name in SERVICES if (r := running_service(settings, name))}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            environ = (entry / "environ").read_bytes().split(b"\0")
            cmdline = (entry / "cmdline").read_bytes()
        except (OSError, IndexError):
            continue
        if stat[0] not in ("Z", "X") and (marker in environ or str(home).encode() in cmdline):
            found.add(int(entry.name))
    return sorted(found)
