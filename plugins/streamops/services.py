"""Background services of a state root: processes the local stack starts and stops.

The simulators and the embedded Airflow's processes are services: each runs in its own
process group with its log under ``<state>/logs`` and a pid file under ``<state>/services/``,
so ``streamops down`` finds and stops them whoever started them. The stack
(:mod:`streamops.stack.local_stack`), the embedded Airflow
(:mod:`streamops.stack.airflow_stack`) and ``streamops sim start``
(:mod:`streamops.sim.background`) all start services, and the stack starts the other two:
this module is what they need, below them all (the processes themselves:
:mod:`streamops.processes`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping

from streamops import processes
from streamops.settings import Settings
from streamops.state.layout import read_json, write_json_atomic

log = logging.getLogger("streamops.services")


def _service_spec(
    settings: Settings, name: str, argv: list[str], env: Mapping[str, str] | None = None
) -> processes.DaemonSpec:
    return processes.DaemonSpec(
        name=name,
        kind="service",
        argv=tuple(argv),
        env={"PYTHONUNBUFFERED": "1", **(env or {})},
        log=settings.layout.logs_dir / f"{name}.log",
        ports={},
    )


def running_service(settings: Settings, name: str) -> processes.PidRecord | None:
    """The pid record of service ``name`` if it runs (a stale pid file counts as not)."""
    data = read_json(settings.layout.service_pid_file(name))
    record = processes.PidRecord.from_json(data) if data else None
    return record if record and processes.is_running(record) else None


def start_service(
    settings: Settings, name: str, argv: list[str], env: Mapping[str, str] | None = None
) -> processes.PidRecord:
    """Start one background service unless it already runs; record its pid file.

    ``env`` is set over the caller's environment (``SPARK_*`` variables are dropped)."""
    record = running_service(settings, name)
    if record:
        log.info("%s already running (pid %s)", name, record.pid)
        return record
    record = processes.launch(_service_spec(settings, name, argv, env))
    write_json_atomic(settings.layout.service_pid_file(name), record.__dict__)
    log.info("started %s (pid %s); log %s", name, record.pid, record.log)
    return record


def stop_services(settings: Settings, names: Iterable[str] | None = None) -> list[str]:
    """Stop the services ``names`` (default: every service of the state root), SIGTERM first,
    then their whole process group; remove their pid files."""
    folder = settings.layout.service_pid_file("x").parent
    wanted = None if names is None else set(names)
    files = [
        p for p in sorted(folder.glob("*.json")) if wanted is None or p.stem in wanted
    ]  # fmt: skip
    records = [processes.PidRecord.from_json(read_json(p) or {}) for p in files]
    processes.stop_daemons(records, timeout=10.0)
    for p in files:
        p.unlink(missing_ok=True)
    for r in records:
        log.info("stopped %s", r.name)
    return [r.name for r in records]
