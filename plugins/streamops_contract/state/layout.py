"""The state root's directory layout, as the ops side and the drivers share it.

Both the ops side (CLI, Airflow) and the job runtime inside the Spark driver import this
module, so each of these paths is spelled in one place (the declarative store, the describe
cache, the trades' data and the cluster's secrets name their own, under the root)::

    <root>/checkpoints/<job>/<stage>/          Spark checkpoint of one stage
    <root>/savepoints/<name>/manifest.json     savepoint manifest (+ stages/<stage>/)
    <root>/jobs/<job>/status.json              written by the driver after every batch
    <root>/jobs/<job>/status-history.jsonl     one line per batch, for gap measurements
    <root>/jobs/<job>/submissions.jsonl        one line per submission made by the ops side
    <root>/jobs/<job>/drivers.jsonl            one line per driver start (relaunches included)
    <root>/jobs/<job>/control/<id>.json        control requests (+ <id>.result.json)
    <root>/jobs/<job>/lease.json               fencing lease
    <root>/code/<job>/<job>-<hash>.zip         a job's own code, one zip per version
    <root>/cluster/                            pid files, recovery dir, worker dirs, logs
    <root>/cluster/agents/<node>.json          node agents: url, role, pid (the agent registry)
    <root>/cluster/agent.token                 bearer token of the node agents (mode 0600)
    <root>/cluster/intents/<operation>.json    intent records of cluster procedures (restart, scale)
    <root>/cluster/desired-workers.json        the worker count the last scale asked for
    <root>/lib/active -> <config>/jars/releases/<release>   the active classpath jar release
    <root>/services/<name>.json                pid files of the stack's simulators
    <root>/health/history.jsonl                one line per health check run
    <root>/airflow/                            AIRFLOW_HOME of the embedded Airflow
    <root>/journals/                           what the simulators emitted (the oracle)
    <root>/data/alpha/                         default drop directory of fleetsim-alpha
    <root>/data/beta/                          fleetsim-beta's durable log (log/: id, segments)
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from streamops_contract.names import check_name

T = TypeVar("T")


@dataclass(frozen=True)
class StateLayout:
    """Paths under one state root. Every name is validated before it becomes a path."""

    root: Path

    @classmethod
    def at(cls, root: str | os.PathLike[str]) -> StateLayout:
        return cls(Path(root).expanduser().resolve())

    # --- jobs -------------------------------------------------------------------------
    @property
    def checkpoints_dir(self) -> Path:
        return self.root / "checkpoints"

    def job_checkpoints(self, job: str) -> Path:
        return self.checkpoints_dir / check_name("job", job)

    def checkpoint(self, job: str, stage: str) -> Path:
        return self.job_checkpoints(job) / check_name("stage", stage)

    def code_zip(self, job: str, digest: str) -> Path:
        """One version of a job's own code (``streamops.job_code``)."""
        return self.root / "code" / check_name("job", job) / f"{job}-{digest}.zip"

    @property
    def jobs_dir(self) -> Path:
        return self.root / "jobs"

    def job_dir(self, job: str) -> Path:
        return self.jobs_dir / check_name("job", job)

    def status_file(self, job: str) -> Path:
        return self.job_dir(job) / "status.json"

    def status_history(self, job: str) -> Path:
        return self.job_dir(job) / "status-history.jsonl"

    def submissions_file(self, job: str) -> Path:
        return self.job_dir(job) / "submissions.jsonl"

    def drivers_file(self, job: str) -> Path:
        """Every driver of the job appends itself here when it starts (a relaunched driver's
        id is in no submission)."""
        return self.job_dir(job) / "drivers.jsonl"

    def control_dir(self, job: str) -> Path:
        return self.job_dir(job) / "control"

    def pause_file(self, job: str) -> Path:
        """Present while the driver drains its stages to a batch boundary (sources read nothing)."""
        return self.job_dir(job) / "paused"

    def intent_record(self, job: str, procedure: str) -> Path:
        """The last recorded step of ``procedure`` (upgrade, restart, deploy) on ``job``."""
        return self.job_dir(job) / f"{check_name('procedure', procedure)}.json"

    def standby_dir(self, job: str) -> Path:
        """Warm-standby handshake: ``<token>.ready.json`` or ``<token>.failed.json`` (driver),
        ``<token>.go.json`` or ``<token>.aborted.json`` (ops), ``<token>.open`` (driver)."""
        return self.job_dir(job) / "standby"

    def standby_ready_file(self, job: str, token: str) -> Path:
        """Written by a warm standby once it is ready (stages, executors, warm-up time)."""
        return self.standby_dir(job) / f"{token}.ready.json"

    def standby_failed_file(self, job: str, token: str) -> Path:
        """Written by a warm standby that failed before it was ready: the error (the ops side
        stops waiting at once; a supervised driver would otherwise be relaunched until the
        ops side's timeout)."""
        return self.standby_dir(job) / f"{token}.failed.json"

    def standby_go_file(self, job: str, token: str) -> Path:
        """Written by the ops side to release a standby: savepoint name and start positions."""
        return self.standby_dir(job) / f"{token}.go.json"

    def standby_aborted_file(self, job: str, token: str) -> Path:
        """Written by the ops side before it kills a standby it will not use: a relaunch of
        that standby (its node died; the master relaunched it under a new id the ops side
        never saw) exits at once instead of waiting for a go that never comes."""
        return self.standby_dir(job) / f"{token}.aborted.json"

    def standby_gate_file(self, job: str, token: str) -> Path:
        """Created by a released standby once it holds the lease: its armed queries' sources,
        blocked until then, start reading."""
        return self.standby_dir(job) / f"{token}.open"

    def hot_standby_file(self, job: str) -> Path:
        """Written by a job's hot standby once it is armed (driver, app, worker, armed at);
        removed when it takes the job over or is dismissed."""
        return self.standby_dir(job) / "hot.json"

    def sources_state_dir(self, job: str) -> Path:
        """Where the job's source readers write their state (``ok``/``degraded``, losses)."""
        return self.job_dir(job) / "sources"

    def spool_dir(self, job: str) -> Path:
        """Where the job's sources keep the records fetched for their planned batches."""
        return self.job_dir(job) / "spool"

    def lease_file(self, job: str) -> Path:
        return self.job_dir(job) / "lease.json"

    def known_jobs(self) -> list[str]:
        if not self.jobs_dir.is_dir():
            return []
        return sorted(p.name for p in self.jobs_dir.iterdir() if p.is_dir())

    # --- savepoints -------------------------------------------------------------------
    @property
    def savepoints_dir(self) -> Path:
        return self.root / "savepoints"

    def savepoint(self, name: str) -> Path:
        return self.savepoints_dir / check_name("savepoint", name)

    # --- cluster ----------------------------------------------------------------------
    @property
    def cluster_dir(self) -> Path:
        return self.root / "cluster"

    @property
    def logs_dir(self) -> Path:
        return self.cluster_dir / "logs"

    @property
    def recovery_dir(self) -> Path:
        return self.cluster_dir / "recovery"

    @property
    def worker_conf_dir(self) -> Path:
        """``SPARK_CONF_DIR`` of the workers and of the JVMs they launch, kept empty (the JVM
        archives no class behind a non-empty directory: ``streamops.cluster.class_archives``)."""
        return self.cluster_dir / "worker-conf"

    @property
    def class_archives_dir(self) -> Path:
        """Class data sharing archives of the drivers and executors, per JDK and classpath."""
        return self.cluster_dir / "class-archives"

    def worker_dir(self, worker: str) -> Path:
        return self.cluster_dir / "work" / check_name("worker", worker)

    def pid_file(self, daemon: str) -> Path:
        return self.cluster_dir / "pids" / f"{check_name('daemon', daemon)}.json"

    def service_pid_file(self, service: str) -> Path:
        """Pid file of a non-Spark service of the local stack (simulators, dashboard)."""
        return self.root / "services" / f"{check_name('service', service)}.json"

    # --- operations -------------------------------------------------------------------
    @property
    def health_dir(self) -> Path:
        return self.root / "health"

    @property
    def health_history(self) -> Path:
        """One JSON line per health check run (``streamops health --history``)."""
        return self.health_dir / "history.jsonl"

    @property
    def airflow_home(self) -> Path:
        """``AIRFLOW_HOME`` of the embedded Airflow: SQLite metadata, logs, password file."""
        return self.root / "airflow"

    @property
    def journals_dir(self) -> Path:
        return self.root / "journals"

    @property
    def lib_dir(self) -> Path:
        return self.root / "lib"

    # --- node agents and jar releases ---------------------------------------------------
    @property
    def agents_dir(self) -> Path:
        return self.cluster_dir / "agents"

    def agent_file(self, node: str) -> Path:
        return self.agents_dir / f"{check_name('node', node)}.json"

    @property
    def agent_profile_file(self) -> Path:
        """The cluster profile the embedded agents size their daemons with."""
        return self.cluster_dir / "profile.json"

    @property
    def agent_token_file(self) -> Path:
        return self.cluster_dir / "agent.token"

    def intent_file(self, operation: str) -> Path:
        return self.cluster_dir / "intents" / f"{check_name('operation', operation)}.json"

    @property
    def desired_workers_file(self) -> Path:
        """The ALIVE workers the last scale asked for (health expects them); removed when
        the whole cluster stops, so a fresh start expects the profile's count again."""
        return self.cluster_dir / "desired-workers.json"

    @property
    def active_release_link(self) -> Path:
        """Symlink to the active jar release; the cluster's extra classpath is ``<it>/*``."""
        return self.lib_dir / "active"

    @property
    def release_record(self) -> Path:
        """Which release is active, which was before, when it was switched."""
        return self.lib_dir / "release.json"

    # --- data -------------------------------------------------------------------------
    @property
    def alpha_dir(self) -> Path:
        return self.root / "data" / "alpha"

    @property
    def beta_dir(self) -> Path:
        """fleetsim-beta's ``--data-dir``: its stream id and log survive a restart."""
        return self.root / "data" / "beta"

    @property
    def default_store_url(self) -> str:
        return f"sqlite:///{self.root / 'fleet.db'}"


def write_json_atomic(path: Path, payload: Any) -> None:
    """Write JSON to ``path`` atomically: a temporary file beside it, fsync, then rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(payload, fh, indent=2, sort_keys=True, default=str)
            fh.write("\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read_json(path: Path) -> Any | None:
    """Read a JSON file written by :func:`write_json_atomic`; ``None`` if it does not exist."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None


def read_record(path: Path, parse: Callable[[Any], T], what: str) -> T | None:
    """``parse`` of the JSON file ``path``; ``None`` if there is none, or, with a warning
    naming ``what``, if it cannot be parsed."""
    try:
        data = read_json(path)
        return None if data is None else parse(data)
    except (KeyError, TypeError, ValueError) as exc:
        logging.getLogger("streamops.state").warning("ignoring unreadable %s %s: %s", what,
                                                     path, exc)  # fmt: skip
        return None


def append_jsonl(path: Path, record: dict[str, Any]) -> None:
    """Append one JSON line (a single ``write`` call, so lines never interleave)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    line = json.dumps(record, sort_keys=True, default=str) + "\n"
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(line)
