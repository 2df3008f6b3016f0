"""A streamops cluster across network namespaces (:mod:`support.netns`), as the compose file
deploys it on containers: the master in one host, each worker with its node agent in its own,
both simulators in another, the state root one directory every host shares (the compose
file's volume). The test process is the operator's machine on the same network (the bridge's
address): it operates the cluster only through the master's REST/JSON endpoints and the node
agents, at the hosts' addresses.

Every host's processes get its address (``STREAMOPS_NODE_HOST``) and the master's
(``STREAMOPS_MASTER_HOST``); nothing is given loopback. Security is the default (``auto``):
the master is not on loopback, so the REST token and the RPC secret are on.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests
import yaml
from support.integration import wait_until
from support.netns import Host, NetnsLab, wait_tcp
from support.oracle import (
    Comparison,
    compare_vehicles,
    compare_windows,
    latest_per_vin,
    tumbling_windows,
)

from spark_jobs.runtime.savepointing import committed_offsets
from streamops.agent.registry import Agents, load_token
from streamops.cluster.client import MasterClient
from streamops.cluster.daemons import MASTER_NAME
from streamops.jobs import JobRegistry
from streamops.settings import Settings
from streamops.sim import read_journal
from streamops.sim.journal import valid_pings
from streamops.spec import JobSpec, load_spec
from streamops.stack.airflow_stack import AirflowOptions, AirflowStack
from streamops.state.layout import write_json_atomic
from streamops_contract.sinks import store
from streamops_contract.state.checkpoint_cut import last_batch

CONFIG = Path(__file__).resolve().parents[2] / "config" / "jobs"
AGENT_PORT = 7070
AIRFLOW_PORT = 8088  # on the master's host (a namespace of its own: no other program there)
BETA_PORT = 8000
WORKER_TIMEOUT_S = 10  # spark.worker.timeout: how soon the master declares a silent worker DEAD
# Three cores a worker: a partition leaves the cut-off driver's executors holding their
# cores on the other hosts (their application stays registered until the master hears from
# the old driver again), so the relaunch needs room beside them.
PROFILE = {
    "workers": 3, "max_workers": 4, "worker_cores": 3, "worker_memory": "3g",
    "worker_webui_port_base": 8181, "jar_release": "r1", "start_timeout": 150,
    "master_properties": {"spark.worker.timeout": str(WORKER_TIMEOUT_S)},
    "worker_properties": {"spark.worker.timeout": str(WORKER_TIMEOUT_S)},
}  # fmt: skip


@dataclass
class MultiHost:
    """The lab, its hosts and the operator's settings (this process)."""

    lab: NetnsLab
    root: Path  # the work directory: state root, store, journals, logs
    workers: int = 3
    hosts: dict[str, Host] = field(default_factory=dict)

    @property
    def state_root(self) -> Path:
        return self.root / "state"

    @property
    def settings(self) -> Settings:
        """The operator's settings: the master's address, this machine's on the bridge."""
        return Settings.from_env({}, state_root=str(self.state_root),
                                 master_host=self.hosts[MASTER_NAME].address,
                                 node_host=self.lab.ops_address)  # fmt: skip

    @property
    def registry(self) -> JobRegistry:
        return JobRegistry(self.settings)

    @property
    def logs(self) -> Path:
        path = self.root / "logs"
        path.mkdir(parents=True, exist_ok=True)
        return path

    def host_env(self, host: Host) -> dict[str, str]:
        """The environment of ``host``'s processes: its address, the master's, the state root."""
        base = {k: v for k, v in os.environ.items()
                if not k.startswith(("SPARK_", "PYSPARK_", "STREAMOPS_"))}  # fmt: skip
        own = self.settings.model_copy(update={"node_host": host.address}).to_env()
        return {**base, **own, "PYTHONUNBUFFERED": "1"}

    # --- the cluster -----------------------------------------------------------------
    def start(self) -> None:
        """Hosts, agents (each on its host's address), release r1, master, workers."""
        for name in (MASTER_NAME, *(f"worker-{i}" for i in range(1, self.workers + 1)), "sim"):
            self.hosts[name] = self.lab.add_host(name)
        self.state_root.mkdir(parents=True, exist_ok=True)
        profile = self.root / "profile.json"
        profile.write_text(json.dumps(PROFILE))
        write_json_atomic(self.settings.layout.agent_profile_file, PROFILE)
        load_token(self.settings.layout.agent_token_file)  # made once, before any agent
        for name, host in self.hosts.items():
            if name != "sim":
                self.start_agent(host, profile)
        agents = Agents(self.settings, timeout=300)
        for name in self.hosts:
            if name != "sim":
                wait_until(lambda n=name: n in agents.records(), 60, f"the agent of {name}")
        agents.master().switch_release(MASTER_NAME, "r1")
        agents.master().start(MASTER_NAME)
        from concurrent.futures import ThreadPoolExecutor

        names = [n for n in self.hosts if n.startswith("worker-")]
        with ThreadPoolExecutor(max_workers=len(names)) as pool:
            list(pool.map(lambda n: agents.client(n).start(n), names))

    def add_worker_host(self, name: str) -> Host:
        """Scale by agent: a new host, its agent, its worker started through the agent."""
        host = self.hosts[name] = self.lab.add_host(name)
        self.start_agent(host, self.root / "profile.json")
        agents = Agents(self.settings, timeout=300)
        wait_until(lambda: name in agents.records(), 60, f"the agent of {name}")
        agents.client(name).start(name)
        return host

    def start_agent(self, host: Host, profile: Path) -> None:
        argv = [sys.executable, "-m", "streamops", "--state-root", str(self.state_root),
                "agent", "--node", host.name, "--port", str(AGENT_PORT),
                "--profile", str(profile)]  # fmt: skip
        self.lab.spawn(host, argv, self.host_env(host), self.logs / f"agent-{host.name}.log")
        assert wait_tcp(host.address, AGENT_PORT, 60), f"the agent of {host.name} did not listen"

    def start_airflow(self, port: int = AIRFLOW_PORT) -> AirflowStack:
        """Airflow (its embedded PostgreSQL, api-server, scheduler, dag-processor, triggerer)
        on the master's host at its address, started there as an operator would (``streamops
        airflow start``); its tasks run there and reach the cluster at the hosts' addresses.
        The stack returned is this process's view of it (its URL, login, stop)."""
        master = self.hosts[MASTER_NAME]
        env = {**self.host_env(master), "STREAMOPS_AIRFLOW_HOST": master.address,
               "STREAMOPS_AIRFLOW_PORT": str(port)}  # fmt: skip
        argv = [sys.executable, "-m", "streamops", "--state-root", str(self.state_root),
                "airflow", "start"]  # fmt: skip
        log = self.logs / "airflow-start.log"
        started = self.lab.spawn(master, argv, env, log)
        assert started.wait(timeout=900) == 0, f"airflow start failed: {log.read_text()[-3000:]}"
        settings = self.settings.model_copy(update={"node_host": master.address})
        return AirflowStack(settings, AirflowOptions(host=master.address, port=port))

    def alive_workers(self) -> list[str]:
        return sorted(w.host for w in MasterClient(self.settings).workers()
                      if w.state == "ALIVE")  # fmt: skip

    def node_of_driver(self, driver_id: str) -> str:
        """The host (worker node name) the master says runs ``driver_id``."""
        client = MasterClient(self.settings)
        worker = next(d.worker for d in client.active_drivers() if d.id == driver_id)
        address = next(w.host for w in client.workers() if w.id == worker)
        return next(n for n, h in self.hosts.items() if h.address == address)


@dataclass
class HostFleet:
    """fleet-pings on the multi-host cluster, its simulators on the ``sim`` host, its SQLite
    store and journals in the shared directory, and the oracle."""

    cluster: MultiHost
    job: str = "fleet-mh"
    max_pings: int = 100_000  # more than a run needs: :meth:`end_data` ends the data
    rate: float = 40
    vehicles: int = 30
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    @property
    def work(self) -> Path:
        path = self.cluster.root / self.job
        path.mkdir(parents=True, exist_ok=True)
        return path

    @property
    def beta_base(self) -> str:
        return f"http://{self.cluster.hosts['sim'].address}:{BETA_PORT}"

    @property
    def store_url(self) -> str:
        return f"sqlite:///{self.work / 'fleet.db'}"

    def spec(self, file: str = "fleet-pings.yaml", **changes: Any) -> JobSpec:
        base = load_spec(CONFIG / file)
        args = {**base.args, "alpha_dir": str(self.work / "alpha"),
                "beta_url": f"{self.beta_base}/pings", "store_url": self.store_url}  # fmt: skip
        return base.model_copy(update={"name": self.job, "trigger_interval": "1 second",
                                       "args": args, **changes})  # fmt: skip

    def spec_file(self, file: str = "fleet-pings.yaml", **changes: Any) -> Path:
        """:meth:`spec` written to a YAML file of the shared directory (a DAG run's param)."""
        path = self.work / f"{self.job}-{file}"
        path.write_text(yaml.safe_dump(self.spec(file, **changes).model_dump(mode="json")))
        return path

    def start_simulators(self) -> None:
        sim = self.cluster.hosts["sim"]
        env = self.cluster.host_env(sim)
        common = ["--vehicles", str(self.vehicles), "--rate", str(self.rate),
                  "--max-pings", str(self.max_pings)]  # fmt: skip
        self.procs["beta"] = self.cluster.lab.spawn(sim, [
            sys.executable, "-m", "streamops.sim.beta", "--host", sim.address,
            "--port", str(BETA_PORT), "--seed", "22", "--malformed-every", "103", "--linger",
            "--pause-file", str(self.work / "beta.pause"),
            "--data-dir", str(self.work / "beta"), "--journal", str(self.work / "b.jsonl"),
            *common], env, self.work / "beta.log")  # fmt: skip
        self.procs["alpha"] = self.cluster.lab.spawn(sim, [
            sys.executable, "-m", "streamops.sim.alpha", "--dir", str(self.work / "alpha"),
            "--seed", "21", "--malformed-every", "101", "--pings-per-file", "40",
            "--journal", str(self.work / "a.jsonl"), *common], env,
            self.work / "alpha.log")  # fmt: skip
        assert wait_tcp(sim.address, BETA_PORT, 60), (self.work / "beta.log").read_text()

    def head(self) -> dict[str, Any]:
        return dict(requests.get(f"{self.beta_base}/head", timeout=5).json())

    def end_data(self) -> None:
        """The faults are over: alpha stops (its partial file published), beta stops
        generating and serves on what it emitted."""
        (self.work / "beta.pause").touch()
        self.procs["alpha"].terminate()
        self.procs["alpha"].wait(timeout=30)
        time.sleep(1.0)  # a beta batch being generated when the pause file appeared

    def simulators_done(self) -> bool:
        if self.procs["alpha"].poll() is None:
            return False
        first = self.head()["last"]
        time.sleep(1.0)
        return bool(self.head()["last"] == first)

    def wait_caught_up(self, timeout: float = 300) -> None:
        wait_until(self.simulators_done, timeout, "the simulators to finish")
        last_file = max(p.name for p in (self.work / "alpha").glob("pings-*.csv"))
        final = {"file": last_file, "sequence": self.head()["last"]}

        def caught_up() -> bool:
            got = self.committed_positions()
            return bool(got) and all(p.get("file") == final["file"]
                                     and p.get("sequence") == final["sequence"]
                                     for p in got.values())  # fmt: skip

        wait_until(caught_up, timeout, f"{self.job} to read up to {final}",
                   describe=lambda: str(self.committed_positions()))  # fmt: skip

    def committed_positions(self) -> dict[str, dict[str, object]]:
        layout = self.cluster.settings.layout
        out: dict[str, dict[str, object]] = {}
        for stage in self.cluster.registry.view(self.job).stages:
            checkpoint = layout.checkpoint(self.job, stage)
            merged: dict[str, object] = {}
            for offset in committed_offsets(checkpoint, last_batch(checkpoint / "commits")):
                merged.update(offset)
            out[stage] = merged
        return out

    def check(self) -> list[Comparison]:
        """The oracle: every sink equals its recomputation over what the simulators sent
        (nothing lost, nothing counted twice)."""
        records = read_journal(self.work / "a.jsonl") + read_journal(self.work / "b.jsonl")
        good = valid_pings(records)
        engine = store.engine_for(self.store_url)
        return [
            compare_vehicles(latest_per_vin(good), store.read_table(engine, store.vehicles)),
            compare_windows(tumbling_windows(good), store.read_table(engine, store.vehicle_stats)),
        ]

    def finish_and_check(self) -> None:
        self.end_data()
        self.wait_caught_up()
        for result in self.check():
            assert result.ok, result.summary()


def next_batches(settings: Settings, job: str, after: float, stages: set[str]) -> float | None:
    """Seconds from ``after`` until every stage committed a batch, or None while one has not."""
    found: dict[str, float] = {}
    history = settings.layout.status_history(job)
    for line in history.read_text().splitlines():
        rec = json.loads(line)
        if float(rec.get("last_batch_at") or 0) > after:
            found.setdefault(rec["stage"], float(rec["last_batch_at"]))
    return max(found[s] for s in stages) - after if stages <= set(found) else None


@contextmanager
def multihost_cluster(root: Path, workers: int = 3) -> Iterator[MultiHost]:
    """The lab and the cluster on it; everything removed afterwards, even on failure."""
    lab = NetnsLab.create()
    cluster = MultiHost(lab, root, workers)
    started = time.monotonic()
    try:
        cluster.start()
        print(f"multi-host cluster up in {time.monotonic() - started:.1f}s: "
              + ", ".join(f"{n} {h.address}" for n, h in cluster.hosts.items()))
        yield cluster
    finally:
        lab.close()
