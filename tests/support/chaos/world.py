"""The world a chaos campaign acts on: two jobs on a real cluster of (at least) three
workers. A fleet-pings job, with fleetsim-alpha in this process and fleetsim-beta as a process
of its own (so it can be frozen, killed, restarted on its log, or lose its log) that the job
reaches through a TCP link the campaign can cut; and beside it the tutorial's transactions job
on its journal (:class:`~support.chaos.journal_job.JournalJob`), its producer writing all the
time. Every source flows all the time except while the oracle looks. The faults and
procedures act on the fleet job (``job``); a node lost takes whatever of either job ran there.

The oracle (:meth:`ChaosWorld.check`) holds both simulators, waits until every stage has read
everything they emitted, and compares each sink with its batch recomputation over exactly
the records that stage was given: every record, except those of a beta history a stage had
not read when the loss of that history was accepted (:class:`AcceptedLoss`, one per stage,
taken from the stage's checkpoint when the job stopped on the reset). The transactions job's
oracle is its tests': every entry written logged exactly once, as written.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from support.beta_process import BetaProcess
from support.chaos.journal_job import STAGES as JOURNAL_STAGES
from support.chaos.journal_job import JournalJob
from support.integration import ClusterHandle, describe_job, wait_until
from support.oracle import (
    Comparison,
    compare_vehicles,
    compare_windows,
    latest_per_vin,
    tumbling_windows,
)
from support.postgres import link_to
from support.tcp_proxy import TcpProxy

from spark_jobs.runtime.savepointing import committed_offsets
from streamops.jobs import JobRegistry
from streamops.sim import AlphaSimulator, read_journal
from streamops.sim.journal import JournalRecord, valid_pings
from streamops.spec import JobSpec, load_spec
from streamops.stack.airflow_stack import AirflowOptions, AirflowStack
from streamops.world.submit import submit_job
from streamops_contract.sinks import store
from streamops_contract.state.checkpoint_cut import last_batch

CONFIG = Path(__file__).resolve().parents[3] / "config" / "jobs"
STAGES = ("vehicles", "vehicle-stats-1m")
TX_STAGES = JOURNAL_STAGES


@dataclass(frozen=True)
class AcceptedLoss:
    """A beta history given up: each stage had read it up to ``read_until[stage]``."""

    history: int
    read_until: dict[str, int]
    emitted: int

    def lost(self, stage: str) -> int:
        return max(0, self.emitted - self.read_until.get(stage, 0))


@dataclass
class ChaosWorld:
    cluster: ClusterHandle
    workdir: Path
    beta_port: int
    job: str = "fleet-chaos"
    rate: float = 40
    vehicles: int = 30
    standby: str = "none"
    postgres_url: str = ""  # a PostgreSQL store (reached through a link the campaign can cut)
    reset_policy: str = "fail"
    airflow_port: int = 0  # where the world's Airflow listens, once a step needs it (0: never)
    last_step: bool = False
    """The campaign's step now running is its last (set by ``run_campaign``): a step that
    puts the job back as it found it for the next one need not."""
    second_job: bool = False
    """The tutorial's transactions job runs beside fleet-pings (``STREAMOPS_CHAOS_TWO_JOBS=1``)."""
    workers: int = 0
    """Workers the world runs on (added at its start if fewer run); 0: 3 with the second job
    (after a node is lost the two jobs, 5 cores, must fit on those left, 3 cores each), else
    the cluster as found."""
    beta_histories: list[Path] = field(default_factory=list)
    losses: list[AcceptedLoss] = field(default_factory=list)
    alpha: AlphaSimulator = field(init=False)
    beta: BetaProcess = field(init=False)

    def __post_init__(self) -> None:
        self.alpha_dir = self.workdir / "alpha"
        self.store_url = f"sqlite:///{self.workdir / 'fleet.db'}"
        self.store_link: TcpProxy | None = None
        if self.postgres_url:
            self.store_url, self.store_link = link_to(self.postgres_url)
        self.alpha = AlphaSimulator(
            self.alpha_dir, seed=31, vehicles=self.vehicles, rate=self.rate, pings_per_file=40,
            malformed_every=101, journal=self.workdir / "alpha.jsonl",
        )  # fmt: skip
        self.beta_histories.append(self.workdir / "beta-1.jsonl")
        self.beta = BetaProcess(self.beta_port, self.workdir / "beta-data",
                                self.beta_histories[-1], self.workdir / "beta.log",
                                seed=32, vehicles=self.vehicles, rate=self.rate)  # fmt: skip
        self.beta_link = TcpProxy(("127.0.0.1", self.beta_port))  # the job's way to beta
        self.tx = JournalJob(self.workdir)
        self.added_workers: list[str] = []
        self._airflow: AirflowStack | None = None

    # -- the job ---------------------------------------------------------------------------
    @property
    def settings(self) -> Any:
        return self.cluster.settings

    @property
    def registry(self) -> JobRegistry:
        return self.cluster.registry

    def spec(self, file: str = "fleet-pings.yaml") -> JobSpec:
        base = load_spec(CONFIG / file)
        beta_url = f"http://127.0.0.1:{self.beta_link.port}/pings"
        args = {**base.args, "alpha_dir": str(self.alpha_dir), "beta_url": beta_url,
                "store_url": self.store_url}  # fmt: skip
        changes: dict[str, object] = {"name": self.job, "trigger_interval": "1 second",
                                      "args": args, "on_source_reset": self.reset_policy}
        if self.standby != "none":
            changes["standby"] = self.standby
        return base.model_copy(update=changes)

    def spec_file(self, file: str = "fleet-pings.yaml") -> Path:
        """:meth:`spec` written to a YAML file of the workdir (for a DAG run's params)."""
        path = self.workdir / f"{self.job}-{file}"
        path.write_text(yaml.safe_dump(self.spec(file).model_dump(mode="json",
                                                                  exclude_defaults=True)))
        return path

    def airflow(self) -> AirflowStack:
        """The world's Airflow (api-server, scheduler, dag-processor, triggerer, its embedded
        PostgreSQL) on the cluster's settings, started by the first step that needs it."""
        if self._airflow is None:
            assert self.airflow_port, "this world has no port for Airflow"
            self._airflow = AirflowStack(self.settings, AirflowOptions(port=self.airflow_port,
                                                                       start_timeout=600))
            self._airflow.start()
        return self._airflow

    @property
    def jobs(self) -> dict[str, tuple[str, ...]]:
        """Every job of the world, with its stages."""
        return {self.job: STAGES, **({self.tx.name: TX_STAGES} if self.second_job else {})}

    def describe(self) -> str:
        return "; ".join(describe_job(self.registry.view(job)) for job in self.jobs)

    def start(self) -> None:
        alive = [w for w in self.registry.client.workers() if w.state == "ALIVE"]
        for _ in range((self.workers or (3 if self.second_job else 0)) - len(alive)):
            self.added_workers.append(self.cluster.cluster.add_worker())
        self.beta.start()
        self.beta_link.start()
        self.alpha.start()
        if self.second_job:
            self.tx.start()

    def submit(self) -> None:
        """The world's jobs, healthy."""
        submit_job(self.spec(), self.settings, wait_healthy=300)
        if self.second_job:
            submit_job(self.tx.spec(), self.settings, wait_healthy=300)

    def stop(self) -> None:
        if self.second_job:
            self.tx.stop()
        self.alpha.stop()
        self.beta_link.stop()
        self.beta.stop()
        if self._airflow is not None:
            self._airflow.stop()
            assert self._airflow.database.postgres.pid() is None, "Airflow's PostgreSQL runs on"
        for job in self.jobs:
            if self.registry.view(job).is_live:
                self.registry.cancel(job)
        for name in self.added_workers:  # the cluster as the world found it
            if name in self.cluster.cluster.daemons():
                self.cluster.cluster.remove_worker(name, graceful=False)
        if self.store_link is not None:
            engine = store._engines.pop(self.store_url, None)
            if engine is not None:
                engine.dispose()
            self.store_link.stop()

    # -- positions -------------------------------------------------------------------------
    def committed(self) -> dict[str, dict[str, Any]]:
        """Per stage, the end offsets of its newest committed batch."""
        out: dict[str, dict[str, Any]] = {}
        for stage in STAGES:
            checkpoint = self.settings.layout.checkpoint(self.job, stage)
            merged: dict[str, Any] = {}
            for offset in committed_offsets(checkpoint, last_batch(checkpoint / "commits")):
                merged.update(offset)
            out[stage] = merged
        return out

    # -- the oracle ------------------------------------------------------------------------
    def records_for(self, stage: str) -> list[JournalRecord]:
        """What ``stage`` was given: alpha's records, and each beta history up to where the
        stage had read it when it was given up (all of the current one)."""
        records = read_journal(self.workdir / "alpha.jsonl")
        until = {loss.history: loss.read_until[stage] for loss in self.losses}
        for number, path in enumerate(self.beta_histories, start=1):
            limit = until.get(number)
            records += [r for r in read_journal(path) if limit is None or r.sequence <= limit]
        return records

    def hold(self) -> dict[str, Any]:
        """Hold both simulators; the positions every stage must reach."""
        self.alpha.pause()
        last = self.beta.pause()
        files = sorted(p.name for p in self.alpha_dir.glob("pings-*.csv"))
        return {"file": files[-1] if files else "", "sequence": last}

    def release(self) -> None:
        self.beta.resume()
        self.alpha.resume()

    def wait_caught_up(self, final: dict[str, Any], timeout: float = 240) -> float:
        t0 = time.monotonic()

        def caught_up() -> bool:
            got = self.committed()
            return all(p.get("file") == final["file"] and p.get("sequence") == final["sequence"]
                       for p in got.values())  # fmt: skip

        wait_until(caught_up, timeout, f"{self.job} to read up to {final}", interval=0.5,
                   describe=lambda: f"{self.describe()}; committed {self.committed()}")
        return time.monotonic() - t0

    def compare(self) -> list[Comparison]:
        engine = store.engine_for(self.store_url)
        vehicles = valid_pings(self.records_for("vehicles"))
        stats = valid_pings(self.records_for("vehicle-stats-1m"))
        return [
            compare_vehicles(latest_per_vin(vehicles), store.read_table(engine, store.vehicles)),
            compare_windows(tumbling_windows(stats), store.read_table(engine, store.vehicle_stats)),
        ]

    def check(self) -> tuple[list[Comparison], float]:
        """Hold the simulators and the producer, wait until both jobs read all, compare,
        release; the comparisons and how long the catch-up took."""
        t0 = time.monotonic()
        final = self.hold()
        last = self.tx.hold() if self.second_job else None
        try:
            self.wait_caught_up(final)
            if last is None:
                return self.compare(), time.monotonic() - t0
            self.tx.wait_caught_up(last, self.describe)
            return [*self.compare(), self.tx.compare(last)], time.monotonic() - t0
        finally:
            if self.second_job:
                self.tx.start()
            self.release()
