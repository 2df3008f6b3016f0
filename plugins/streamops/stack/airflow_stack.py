"""The embedded Airflow 3 of the local stack: api-server, scheduler, dag-processor, triggerer.

Everything lives under ``<state>/airflow/`` (``AIRFLOW_HOME``): the metadata database (an
embedded PostgreSQL by default, :mod:`streamops.stack.airflow_db`), task logs, the simple auth
manager's password file and the secrets the processes share (JWT secret, API secret key,
Fernet key), both written once with mode 0600. The processes run the project's ``dags/`` and
``plugins/`` with LocalExecutor and the ``STREAMOPS_*`` environment of the settings; the
connection ``spark_standalone_default`` points at the master's REST server. They are
services of the stack (pid files under ``<state>/services/``), so ``streamops down`` stops
them; the UI is on ``http://127.0.0.1:8088`` (``STREAMOPS_AIRFLOW_PORT``), user ``admin``.
"""

from __future__ import annotations

import importlib.metadata
import json
import logging
import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import requests

from streamops.exceptions import ConfigError, ProcessError
from streamops.services import running_service, start_service, stop_services
from streamops.settings import PROJECT_ROOT, Settings
from streamops.stack.airflow_db import EMBEDDED, MetadataDatabase, parse_choice
from streamops.stack.airflow_health import HEALTH_KEYS, stale_components, wait_for_api_server
from streamops.state.layout import read_json
from streamops_contract.hosts import LOOPBACK

log = logging.getLogger("streamops.airflow")

COMPONENTS = ("api-server", "scheduler", "dag-processor", "triggerer")
CONNECTION_ID = "spark_standalone_default"
USER = "admin"
SIMPLE_AUTH_MANAGER = (
    "airflow.api_fastapi.auth.managers.simple.simple_auth_manager.SimpleAuthManager"
)


def service_name(component: str) -> str:
    return f"airflow-{component}"


@dataclass(frozen=True)
class AirflowOptions:
    """Where the api-server listens and what Airflow runs; from ``STREAMOPS_AIRFLOW_*``."""

    host: str = LOOPBACK
    port: int = 8088
    password: str | None = None
    dags_folder: Path = PROJECT_ROOT / "dags"
    plugins_folder: Path = PROJECT_ROOT / "plugins"
    start_timeout: float = 300.0
    database: str = EMBEDDED  # STREAMOPS_AIRFLOW_DB: embedded, sqlite or a PostgreSQL URL

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> AirflowOptions:
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        if env.get("STREAMOPS_AIRFLOW_HOST"):
            values["host"] = env["STREAMOPS_AIRFLOW_HOST"]
        if env.get("STREAMOPS_AIRFLOW_PORT"):
            try:
                values["port"] = int(env["STREAMOPS_AIRFLOW_PORT"])
            except ValueError as exc:
                raise ConfigError(
                    f"invalid setting STREAMOPS_AIRFLOW_PORT: {env['STREAMOPS_AIRFLOW_PORT']!r} "
                    "is not a port number"
                ) from exc
        values["database"] = parse_choice(env.get("STREAMOPS_AIRFLOW_DB"))
        if env.get("STREAMOPS_AIRFLOW_PASSWORD"):
            values["password"] = env["STREAMOPS_AIRFLOW_PASSWORD"]
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"


@dataclass(frozen=True)
class ComponentStatus:
    component: str
    pid: int | None
    health: str | None  # from /api/v2/monitor/health; None when the api-server is down


class AirflowStack:
    """Prepare, start, stop and inspect the Airflow processes of one state root."""

    def __init__(self, settings: Settings, options: AirflowOptions | None = None) -> None:
        self.settings = settings
        self.options = options or AirflowOptions.from_env()
        self.home = settings.layout.airflow_home
        self.database = MetadataDatabase(self.home, self.options.database)

    # --- files -----------------------------------------------------------------------
    @property
    def password_file(self) -> Path:
        """The simple auth manager's ``{"admin": password}`` file (0600)."""
        return self.home / "passwords.json"

    @property
    def secrets_file(self) -> Path:
        return self.home / "secrets.json"

    def password(self) -> str:
        data = read_json(self.password_file) or {}
        if USER not in data:
            raise ConfigError(
                f"no password for {USER} in {self.password_file}; run `streamops "
                "airflow start` first"
            )
        return str(data[USER])

    def _ensure_private_json(self, path: Path, make: Mapping[str, str], force: bool) -> dict:
        """Read ``path`` or create it (mode 0600) with ``make``; ``force`` rewrites it."""
        current = None if force else read_json(path)
        if current is None:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(dict(make), fh)
            current = dict(make)
        os.chmod(path, 0o600)
        return dict(current)

    def _secrets(self) -> dict[str, str]:
        from cryptography.fernet import Fernet

        return self._ensure_private_json(
            self.secrets_file,
            {
                "jwt_secret": secrets.token_urlsafe(32),
                "api_secret_key": secrets.token_urlsafe(32),
                "fernet_key": Fernet.generate_key().decode(),
            },
            force=False,
        )

    def _ensure_password(self) -> None:
        given = self.options.password
        current = read_json(self.password_file) or {}
        if given and current.get(USER) != given:
            self._ensure_private_json(self.password_file, {USER: given}, force=True)
        elif USER not in current:
            self._ensure_private_json(
                self.password_file, {USER: secrets.token_urlsafe(12)}, force=True
            )
            log.info("generated the Airflow password of %s into %s", USER, self.password_file)

    # --- environment -----------------------------------------------------------------
    def env(self) -> dict[str, str]:
        """The environment of every Airflow process (and of its tasks)."""
        o, keys = self.options, self._secrets()
        return {
            **self.settings.to_env(),
            "AIRFLOW_HOME": str(self.home),
            **self.database.env(),
            "AIRFLOW__CORE__DAGS_FOLDER": str(o.dags_folder),
            "AIRFLOW__CORE__PLUGINS_FOLDER": str(o.plugins_folder),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
            "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "False",
            "AIRFLOW__CORE__FERNET_KEY": keys["fernet_key"],
            "AIRFLOW__CORE__AUTH_MANAGER": SIMPLE_AUTH_MANAGER,
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": f"{USER}:admin",
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(self.password_file),
            "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"{o.url}/execution/",
            "AIRFLOW__API__HOST": o.host,
            "AIRFLOW__API__PORT": str(o.port),
            "AIRFLOW__API__BASE_URL": o.url,
            "AIRFLOW__API__SECRET_KEY": keys["api_secret_key"],
            "AIRFLOW__API_AUTH__JWT_SECRET": keys["jwt_secret"],
            "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "30",
            # an unchanged DAG file is parsed again every 5 minutes, not every 30 s (a file
            # changed since its last parse goes first in the queue either way): the idle
            # dag-processor took 4.1 % of a core, 0.7-0.9 % so (docs/performance.md)
            "AIRFLOW__DAG_PROCESSOR__MIN_FILE_PROCESS_INTERVAL": "300",
            # a task's calls to the execution API time out after 5 s by default: too short for
            # a small machine that also runs Spark (a task failed in `up` before this)
            "AIRFLOW__WORKERS__EXECUTION_API_TIMEOUT": "30",
            "AIRFLOW__LOGGING__BASE_LOG_FOLDER": str(self.home / "logs"),
        }

    def _airflow(self) -> list[str]:
        return [sys.executable, "-m", "airflow"]

    def _run(self, args: list[str], what: str, timeout: float = 600.0) -> None:
        log.info("airflow: %s", what)
        env = {**os.environ, **self.env()}
        done = subprocess.run(  # noqa: S603 - fixed argv
            [*self._airflow(), *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            cwd=self.home,
        )
        if done.returncode != 0:
            tail = (done.stderr or done.stdout).strip().splitlines()[-15:]
            raise ProcessError(f"`airflow {' '.join(args)}` failed ({what}): " + "\n".join(tail))

    # --- act -------------------------------------------------------------------------
    def prepare(self) -> None:
        """Create the home, password and secrets; migrate the metadata DB; add the connection.

        Each step runs only when needed (an ``airflow`` command costs seconds of CPU): the
        migration when this Airflow version has not migrated this database yet (the version and
        the database are stamped in ``migrated`` after a migration) or its tables are gone, the
        connection's import when it changed or the database is new."""
        self.home.mkdir(parents=True, exist_ok=True)
        self._ensure_password()
        stamp, imported = self.home / "migrated", self.home / "connections.imported"
        version = importlib.metadata.version("apache-airflow")
        current = f"{version} {self.database.where()}"
        stamped = stamp.is_file() and stamp.read_text().strip() == current
        if stamped and self.database.has_schema():
            log.info("metadata database is migrated (Airflow %s)", current)
        else:
            self._run(["db", "migrate"], f"migrating the metadata database ({current})")
            self.database.migrated()
            stamp.write_text(current + "\n")
            imported.unlink(missing_ok=True)  # a new database: the connection is not in it
        conn_file = self.home / "connections.json"
        s = self.settings
        text = json.dumps(
            {
                CONNECTION_ID: {
                    "conn_type": "spark_standalone",
                    "host": s.master_host,
                    "port": s.rest_port,
                    "description": "Spark master of the local stack (REST submission port)",
                    "extra": json.dumps(
                        {
                            "webui_port": s.master_webui_port,
                            "master_port": s.master_port,
                            "state_root": str(s.state_root),
                        }
                    ),
                }
            }
        )
        if imported.is_file() and imported.read_text() == text:
            log.info("connection %s is current", CONNECTION_ID)
            return
        conn_file.write_text(text)
        self._run(
            ["connections", "import", str(conn_file), "--overwrite"],
            f"creating the connection {CONNECTION_ID}",
        )
        imported.write_text(text)

    def start(self) -> None:
        """Prepare, start the four processes (unless running) and wait until they are healthy."""
        self.launch()
        self.wait_ready()

    def launch(self) -> None:
        """Prepare and start the four processes unless they run; do not wait for them."""
        from streamops.cluster.node import port_is_free

        o = self.options
        if running_service(self.settings, service_name("api-server")) is None and (
            not port_is_free(o.host, o.port)
        ):
            raise ProcessError(
                f"port {o.port} on {o.host} is taken by another program; set "
                "STREAMOPS_AIRFLOW_PORT to a free port"
            )
        self.prepare()
        env = self.env()
        stale, why = self._stale_components()
        if stale:
            log.warning("restarting Airflow's %s: %s", ", ".join(stale), why)
            stop_services(self.settings, [service_name(c) for c in stale])
        for component in COMPONENTS:
            argv = [sys.executable, "-m", "streamops.stack.airflow_stack", component]
            if component == "api-server":
                argv += ["--host", o.host, "--port", str(o.port)]
            start_service(self.settings, service_name(component), argv, env)

    def _stale_components(self) -> tuple[list[str], str]:
        running = {
            c: r for c in COMPONENTS if (r := running_service(self.settings, service_name(c)))
        }
        if not running:
            return [], ""
        restarted = self.database.postgres.started_here
        health = None if restarted else self.health()
        return stale_components(running, health, restarted, datetime.now(UTC))

    def wait_ready(self) -> dict[str, Any]:
        """Block until the api-server answers and reports every component healthy."""
        deadline = time.monotonic() + self.options.start_timeout
        next_log, last = 0.0, "no answer"
        while time.monotonic() < deadline:
            self._check_alive()
            health = self.health()
            if health is not None:
                bad = [
                    k
                    for k, v in health.items()
                    if isinstance(v, dict) and v.get("status") != "healthy"
                ]
                if not bad:
                    log.info("Airflow is up at %s", self.options.url)
                    return health
                last = f"not healthy yet: {', '.join(bad)}"
            if time.monotonic() >= next_log:
                log.info("waiting for Airflow at %s (%s)", self.options.url, last)
                next_log = time.monotonic() + 15
            time.sleep(2.0)
        raise ProcessError(
            f"Airflow at {self.options.url} not healthy after {self.options.start_timeout:.0f}s "
            f"({last}); see the logs under {self.settings.layout.logs_dir}/airflow-*.log"
        )

    def _check_alive(self) -> None:
        for component in COMPONENTS:
            if running_service(self.settings, service_name(component)) is None:
                logfile = self.settings.layout.logs_dir / f"{service_name(component)}.log"
                tail = (
                    logfile.read_text(errors="replace").splitlines()[-10:]
                    if (logfile.is_file())
                    else []
                )
                raise ProcessError(
                    f"airflow {component} exited; last lines of {logfile}:\n" + "\n".join(tail)
                )

    def stop(self) -> list[str]:
        """Stop the four processes, then the embedded PostgreSQL (if it runs)."""
        stopped = stop_services(self.settings, [service_name(c) for c in COMPONENTS])
        if self.database.postgres.stop():
            stopped.append("airflow-postgres")
        return stopped

    # --- observe ---------------------------------------------------------------------
    def health(self) -> dict[str, Any] | None:
        """``/api/v2/monitor/health`` (no login needed), ``None`` when it does not answer."""
        try:
            r = requests.get(f"{self.options.url}/api/v2/monitor/health", timeout=5)
            r.raise_for_status()
            data = r.json()
        except (requests.RequestException, ValueError):
            return None
        return data if isinstance(data, dict) else None

    def status(self) -> list[ComponentStatus]:
        health = self.health() or {}
        out = []
        for component in COMPONENTS:
            record = running_service(self.settings, service_name(component))
            entry = health.get(HEALTH_KEYS[component])
            out.append(
                ComponentStatus(
                    component,
                    record.pid if record else None,
                    entry.get("status") if isinstance(entry, dict) else None,
                )
            )
        return out

    def token(self) -> str:
        """A JWT for the REST API (``POST /auth/token`` of the simple auth manager)."""
        r = requests.post(
            f"{self.options.url}/auth/token",
            json={"username": USER, "password": self.password()},
            timeout=10,
        )
        if r.status_code >= 400:
            raise ProcessError(
                f"Airflow refused the login of {USER}: HTTP {r.status_code} {r.text[:200]}"
            )
        return str(r.json()["access_token"])

    def login_hint(self) -> str:
        return (
            f"Airflow UI {self.options.url}  (user {USER}, password in {self.password_file};"
            " `streamops airflow status` prints both)"
        )


def supervise(argv: list[str]) -> int:
    """Run ``argv`` as a child, pass SIGTERM and SIGINT on, exit with its code.

    Airflow rewrites its process title (``airflow api_server -- ...``), so a pid file could no
    longer tell its process from a reused pid. The pid file names this wrapper instead, whose
    command line stays as started; the child shares its process group, so a stop that ends
    the group ends both.
    """
    child = subprocess.Popen(argv)  # noqa: S603 - argv from the caller

    def forward(signum: int, _frame: Any) -> None:
        child.send_signal(signum)

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    return child.wait()


if __name__ == "__main__":  # ``python -m streamops.stack.airflow_stack <component> [args]``
    api = os.environ.get("AIRFLOW__API__BASE_URL", "")
    if sys.argv[1:2] == ["scheduler"] and api and not wait_for_api_server(api):
        print("the api-server did not answer within 300 s; starting the scheduler anyway",
              file=sys.stderr)
    sys.exit(supervise([sys.executable, "-m", "airflow", *sys.argv[1:]]))
