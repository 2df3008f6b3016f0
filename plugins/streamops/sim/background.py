"""The simulators as background services of a state root: ``streamops sim start|stop|status``.

A simulator started in the background is a service (:mod:`streamops.services`): its own
process group, its pid file under ``<state>/services/fleetsim-<sim>.json`` and its log under
``<state>/cluster/logs/fleetsim-<sim>.log``, the names ``streamops up`` uses, so ``streamops
down`` stops it too and ``up`` finds it running. It runs ``streamops sim <sim>`` with the state
root's defaults (beta's and trades' log under ``<state>/data/``, so a restart keeps the
stream; the transactions producer's store is ``<state>/transactions.db``), then the flags it
was last started with (by ``streamops up`` or ``sim start``: its
rate, vehicles and journal are kept in ``<state>/services/fleetsim-<sim>.options`` once it started
with them, a flag given again replacing its value), then the
options given, which win. Stopping is SIGTERM, up to 10 s for the simulator
to close its files, then SIGKILL of its group. The status reads the port the simulator
logged it serves on, and the records it emitted from its ``/head`` (servers) or its last
progress line (alpha).
"""

from __future__ import annotations

import json
import re
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from streamops.cluster.status import tail
from streamops.exceptions import ConfigError, SimulatorError
from streamops.processes import PidRecord
from streamops.services import running_service, start_service, stop_services
from streamops.settings import Settings
from streamops_contract.hosts import dial_address

SIMULATORS = {"alpha": "fleetsim-alpha", "beta": "fleetsim-beta", "trades": "fleetsim-trades",
              "transactions": "fleetsim-transactions"}
"""Simulator → service name."""
SERVERS = frozenset({"beta", "trades"})
"""Simulators that serve HTTP (``/head``, ``/health``)."""

_SERVING = re.compile(r" serving http://(\[[^\]]+\]|[^/\s:]+):(\d+)/")
_PROGRESS = re.compile(r": (\d+) records emitted")


@dataclass(frozen=True)
class SimStatus:
    """One simulator: running or not, and what it says of itself."""

    sim: str
    service: str
    pid: int | None
    host: str | None
    port: int | None
    emitted: int | None
    log: Path

    @property
    def running(self) -> bool:
        return self.pid is not None

    @property
    def url(self) -> str | None:
        return f"http://{self.host}:{self.port}" if self.host and self.port else None


def service_name(sim: str) -> str:
    """``fleetsim-beta`` for ``beta``; :class:`ConfigError` for an unknown simulator."""
    if sim not in SIMULATORS:
        raise ConfigError(f"unknown simulator {sim!r}: choose one of {', '.join(SIMULATORS)}")
    return SIMULATORS[sim]


def command(settings: Settings, sim: str, options: Sequence[str] = ()) -> list[str]:
    """The argv of simulator ``sim`` as a service: the state root's defaults, then
    ``options`` (argparse keeps the last value of a flag, so they win)."""
    service_name(sim)
    layout = settings.layout
    store_url = f"sqlite:///{layout.root.resolve()}/transactions.db"
    defaults = {"alpha": [], "beta": ["--data-dir", str(layout.beta_dir)],
                "trades": ["--data-dir", str(layout.root / "data" / "trades")],
                "transactions": ["--store-url", store_url]}  # fmt: skip
    return [sys.executable, "-m", "streamops", "--state-root", str(settings.state_root),
            "sim", sim, *defaults[sim], *options]  # fmt: skip


def _options_file(settings: Settings, sim: str) -> Path:
    return settings.layout.service_pid_file(service_name(sim)).with_suffix(".options")


def remember(settings: Settings, sim: str, options: Sequence[str]) -> None:
    """Keep the flags ``sim`` was started with (by ``up`` or ``sim start``), so that a later
    ``sim start SIM`` without them starts the same simulator, not the defaults."""
    path = _options_file(settings, sim)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(list(options)), encoding="utf-8")


def merged(before: Sequence[str], now: Sequence[str]) -> list[str]:
    """The flags ``before``, each replaced by its value in ``now`` where ``now`` gives it
    again, then the new ones of ``now``: a flag is the ``--name`` and the values up to the
    next ``--``."""
    flags: dict[str, list[str]] = {}
    for options in (before, now):
        name = ""
        for token in options:
            if token.startswith("--"):
                name = token.split("=", 1)[0]
                flags[name] = [token]
            else:
                flags.setdefault(name, []).append(token)
    return [token for tokens in flags.values() for token in tokens]


PATH_FLAGS = frozenset({"--journal", "--data-dir", "--dir", "--pause-file"})
"""Flags whose value is a path: made absolute where they are typed (the service runs in its
log's folder)."""


def absolute_paths(options: Sequence[str], base: Path | None = None) -> list[str]:
    """``options`` with the value of each path flag (and a relative SQLite ``--store-url``)
    resolved against ``base`` (the caller's working directory), so ``sim start transactions
    --journal j.jsonl`` writes ``./j.jsonl`` of the terminal it was typed in, not of the
    service's folder."""
    where = base or Path.cwd()
    out: list[str] = []
    name = ""
    for token in options:
        if token.startswith("--"):
            name, eq, value = token.partition("=")
            out.append(f"{name}={_absolute(name, value, where)}" if eq else token)
            continue
        out.append(_absolute(name, token, where))
        name = ""
    return out


def _absolute(name: str, value: str, base: Path) -> str:
    if name in PATH_FLAGS and value and not Path(value).is_absolute():
        return str((base / value).resolve())
    prefix = "sqlite:///"
    if name == "--store-url" and value.startswith(prefix):
        path = value[len(prefix):]
        if path and not path.startswith("/") and not path.startswith(":memory:"):
            return prefix + str((base / path).resolve())
    return value


def remembered(settings: Settings, sim: str) -> list[str]:
    """The flags ``sim`` was last started with (none if it never was)."""
    try:
        found = json.loads(_options_file(settings, sim).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    return [str(x) for x in found] if isinstance(found, list) else []


def _log_since_start(record: PidRecord) -> str:
    try:
        with open(record.log, "rb") as fh:
            fh.seek(record.log_offset)
            return fh.read().decode(errors="replace")
    except FileNotFoundError:
        return ""


def _head(host: str, port: int, timeout: float = 2.0) -> dict[str, object] | None:
    address = dial_address(host)  # a service of this machine: bound to all, dialled on loopback
    try:
        with urllib.request.urlopen(f"http://{address}:{port}/head", timeout=timeout) as resp:  # noqa: S310 - http of a local service
            data = json.loads(resp.read())
    except (OSError, ValueError, urllib.error.URLError):
        return None
    return data if isinstance(data, dict) else None


def _status(settings: Settings, sim: str) -> SimStatus:
    service = service_name(sim)
    record = running_service(settings, service)
    log = settings.layout.logs_dir / f"{service}.log"
    if record is None:
        return SimStatus(sim, service, None, None, None, None, log)
    text = _log_since_start(record)
    serving = _SERVING.search(text)
    host, port = (serving.group(1), int(serving.group(2))) if serving else (None, None)
    progress = _PROGRESS.findall(text)
    emitted = int(progress[-1]) if progress else None
    if host and port and (head := _head(host, port)) is not None:
        emitted = int(str(head.get("emitted", emitted or 0)))
    return SimStatus(sim, service, record.pid, host, port, emitted, Path(record.log))


def status(settings: Settings, sims: Iterable[str] | None = None) -> list[SimStatus]:
    """The status of ``sims`` (default: every simulator)."""
    return [_status(settings, sim) for sim in (sims or SIMULATORS)]


def _ready(found: SimStatus, record: PidRecord) -> bool:
    """A server answers ``/head``; alpha and the transactions producer logged that they
    write."""
    if found.sim in SERVERS:
        return found.host is not None and found.port is not None and (
            _head(found.host, found.port) is not None
        )
    return "writing" in _log_since_start(record)


def start(
    settings: Settings, sim: str, options: Sequence[str] = (), timeout: float = 60.0
) -> tuple[SimStatus, bool]:
    """Start ``sim`` in the background unless it runs, with the flags it was last started
    with (by ``up`` or here) and then ``options``; return its status once it serves (a server
    answers ``/head``; alpha logged its start), and whether it was started now."""
    service = service_name(sim)
    if running_service(settings, service) is not None:
        return _status(settings, sim), False
    # the flags given now win; their paths are the caller's, not the service folder's
    options = merged(remembered(settings, sim), absolute_paths(options))
    record = start_service(settings, service, command(settings, sim, options))
    deadline = time.monotonic() + timeout
    while True:
        found = _status(settings, sim)
        if found.running and _ready(found, record):
            remember(settings, sim, options)  # only flags it started with (not --help, say)
            return found, True
        if not found.running:
            last = tail(Path(record.log), offset=record.log_offset)
            raise SimulatorError(f"{service} exited at start; the end of its log {record.log}:"
                                 f"\n{last}")  # fmt: skip
        if time.monotonic() > deadline:
            stop_services(settings, [service])
            raise SimulatorError(f"{service} did not come up within {timeout:.0f}s and was "
                                 f"stopped; its log: {record.log}")  # fmt: skip
        time.sleep(0.2)


def stop(settings: Settings, sims: Iterable[str] | None = None) -> list[str]:
    """Stop ``sims`` (default: every simulator): SIGTERM, 10 s, then SIGKILL of the group;
    return the services that were stopped."""
    services = [service_name(s) for s in (sims or SIMULATORS)]
    running = [s for s in services if running_service(settings, s) is not None]
    stop_services(settings, services)
    return running
