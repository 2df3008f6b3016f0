"""A fleet-pings job running on the session's cluster with both simulators, and the oracle
check that every sink equals its batch recomputation over exactly what the simulators sent.

Used by every test that operates on a live job (upgrade, scale, restart, DAG runs)::

    with FleetRun(spark_cluster, tmp_path, job="fleet-x") as run:
        run.submit()                       # v1, waits until healthy
        ...                                # operate on the job while data flows
        run.finish_and_check()             # simulators drain, job catches up, oracle compares
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

from support.integration import ClusterHandle, describe_job, wait_until
from support.oracle import (
    Comparison,
    compare_vehicles,
    compare_windows,
    latest_per_vin,
    sliding_windows,
    tumbling_windows,
)

from spark_jobs.runtime.savepointing import committed_offsets
from streamops.sim import AlphaSimulator, BetaSimulator, read_journal
from streamops.sim.fleet import Ping
from streamops.sim.journal import JournalRecord, valid_pings
from streamops.spec import JobSpec, load_spec
from streamops.world.submit import submit_job
from streamops_contract.sinks import store
from streamops_contract.state.checkpoint_cut import last_batch

CONFIG = Path(__file__).resolve().parents[2] / "config" / "jobs"


def variant(spec: JobSpec, **changes: object) -> JobSpec:
    return spec.model_copy(update=changes)


def after_position(records: list[JournalRecord], positions: dict[str, dict]) -> list[Ping]:
    """Valid pings strictly after the savepoint's position of their source."""
    alpha = positions.get("fleetsim-alpha", {}).get("file", "")
    beta = int(positions.get("fleetsim-beta", {}).get("sequence", 0))
    out = []
    for r in records:
        if r.ping is None:
            continue
        if (r.source == "alpha" and (r.file or "") > alpha) or (
            r.source == "beta" and r.sequence > beta
        ):
            out.append(r.ping)
    return out


@dataclass
class FleetRun:
    """Simulators + one fleet-pings job (SQLite store under ``workdir``)."""

    cluster: ClusterHandle
    workdir: Path
    job: str = "fleet-it"
    seed: int = 21
    vehicles: int = 30
    rate: float = 30
    max_pings: int = 14000
    store_url: str = ""
    alpha: AlphaSimulator = field(init=False)
    beta: BetaSimulator = field(init=False)

    def __post_init__(self) -> None:
        self.store_url = self.store_url or f"sqlite:///{self.workdir / 'fleet.db'}"
        self.alpha_dir = self.workdir / "alpha"
        self.alpha = AlphaSimulator(
            self.alpha_dir, seed=self.seed, vehicles=self.vehicles, rate=self.rate,
            pings_per_file=40, malformed_every=101, max_pings=self.max_pings,
            journal=self.workdir / "a.jsonl",
        )  # fmt: skip
        self.beta = BetaSimulator(
            port=0, seed=self.seed + 1, vehicles=self.vehicles, rate=self.rate,
            malformed_every=103, max_pings=self.max_pings, journal=self.workdir / "b.jsonl",
        )  # fmt: skip

    # -- specs -------------------------------------------------------------------------
    @property
    def args(self) -> dict[str, Any]:
        return {"alpha_dir": str(self.alpha_dir), "beta_url": self.beta.url,
                "store_url": self.store_url}  # fmt: skip

    def spec(self, file: str = "fleet-pings.yaml", **changes: object) -> JobSpec:
        """A spec from ``config/jobs`` renamed to this run's job, wired to its simulators."""
        base = load_spec(CONFIG / file)
        merged: dict[str, object] = {
            "name": self.job, "trigger_interval": "1 second", "args": {**base.args, **self.args},
        }  # fmt: skip
        merged.update(changes)
        return variant(base, **merged)

    def spec_file(self, file: str = "fleet-pings.yaml", **changes: object) -> Path:
        """:meth:`spec` written as YAML under the work directory (for DAG params and the CLI)."""
        import yaml

        spec = self.spec(file, **changes)
        out = self.workdir / f"{spec.name}-{spec.version}.yaml"
        out.write_text(yaml.safe_dump(spec.model_dump(mode="json"), sort_keys=False))
        return out

    # -- lifecycle ---------------------------------------------------------------------
    def __enter__(self) -> FleetRun:
        self.beta.start()
        self.alpha.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:  # fmt: skip
        self.alpha.stop()
        self.beta.stop()
        self.cluster.let_go(self.job)

    def end_data(self) -> None:
        """Stop both generators now (a drill's operations are over: waiting for ``max_pings``
        would only idle); beta's server keeps answering so the job can read to the end."""
        self.alpha.stop()  # publishes its partial file
        self.beta._stop.set()  # the generator only (stop() would also shut the server down)
        assert self.beta.wait_done(30)

    def submit(self, spec: JobSpec | None = None, wait_healthy: float = 300) -> None:
        submit_job(spec or self.spec(), self.cluster.settings, wait_healthy=wait_healthy)

    # -- the oracle --------------------------------------------------------------------
    def records(self) -> list[JournalRecord]:
        return read_journal(self.workdir / "a.jsonl") + read_journal(self.workdir / "b.jsonl")

    def wait_caught_up(self, timeout: float = 300) -> None:
        """Wait for the simulators to finish and every stage to read up to their end."""
        assert self.alpha.wait_done(timeout) and self.beta.wait_done(timeout)
        last_file = max(p.name for p in self.alpha_dir.glob("pings-*.csv"))
        final = {"file": last_file, "sequence": self.beta.emitted}
        registry = self.cluster.registry

        def caught_up() -> bool:
            # from the checkpoints, not the status: a restored stage that found nothing new
            # commits no batch in its run, so its status has no positions
            got = self.committed_positions(registry.view(self.job).stages)
            return bool(got) and all(
                p.get("file") == final["file"] and p.get("sequence") == final["sequence"]
                for p in got.values()
            )

        wait_until(
            caught_up, timeout, f"{self.job} to read up to {final}",
            describe=lambda: describe_job(registry.view(self.job)),
        )  # fmt: skip

    def committed_positions(self, stages: Any) -> dict[str, dict[str, object]]:
        """Per stage, the end offsets of its last committed batch, merged into one dict."""
        layout = self.cluster.settings.layout
        out: dict[str, dict[str, object]] = {}
        for stage in stages:
            checkpoint = layout.checkpoint(self.job, stage)
            merged: dict[str, object] = {}
            for offset in committed_offsets(checkpoint, last_batch(checkpoint / "commits")):
                merged.update(offset)
            out[stage] = merged
        return out

    def check(self, avg_speed_from: dict[str, dict] | None = None) -> list[Comparison]:
        """Compare the store with the recomputation; ``avg_speed_from`` = the savepoint
        positions where ``avg-speed-5m`` started (v2 only)."""
        records = self.records()
        good = valid_pings(records)
        engine = store.engine_for(self.store_url)
        checks = [
            compare_vehicles(latest_per_vin(good), store.read_table(engine, store.vehicles)),
            compare_windows(tumbling_windows(good), store.read_table(engine, store.vehicle_stats)),
        ]
        if avg_speed_from is not None:
            checks.append(
                compare_windows(
                    sliding_windows(after_position(records, avg_speed_from)),
                    store.read_table(engine, store.avg_speed_5m),
                    "avg_speed_5m",
                )
            )
        return checks

    def finish_and_check(self, avg_speed_from: dict[str, dict] | None = None) -> None:
        """Let the simulators finish, wait for the job to catch up, assert the oracle."""
        self.wait_caught_up()
        for result in self.check(avg_speed_from):
            assert result.ok, result.summary()
