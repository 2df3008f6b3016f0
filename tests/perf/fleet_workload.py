"""The fleet-pings workload of the benchmarks that disturb a running job, and its oracle.

:class:`FleetWorkload`: fleetsim-alpha (in the benchmark's process) and fleetsim-beta (a
process of its own, so a benchmark can freeze it), both at ``rate`` pings/s with journals,
the SQLite store, the fleet-pings spec on them; at the end :meth:`FleetWorkload.check` stops
the data, waits until the job read it all (:func:`wait_caught_up`) and compares the sinks with
the batch recomputation from the journals (:func:`oracle_text`): lost / extra / different.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from harness import NO_HOLDBACK, fleet_spec, free_port
from support.beta_process import BetaProcess
from support.oracle import compare_vehicles, compare_windows, latest_per_vin, tumbling_windows

from streamops.jobs import JobRegistry
from streamops.settings import Settings
from streamops.sim import AlphaSimulator, read_journal
from streamops.sim.journal import valid_pings
from streamops.spec import JobSpec
from streamops_contract.sinks import store


def wait_caught_up(registry: JobRegistry, job: str, alpha_dir: Path, beta_last: int) -> None:
    """Wait until every stage has read the last alpha file and beta sequence."""
    final = {"file": max(p.name for p in alpha_dir.glob("pings-*.csv")), "sequence": beta_last}
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        stages = registry.view(job).stages.values()
        seen = [
            {
                k: v
                for src in st.sources
                if isinstance(src.end_offset, dict)
                for k, v in src.end_offset.items()
            }
            for st in stages
        ]
        if seen and all(s.get("file") == final["file"] and s.get("sequence") == beta_last
                        for s in seen):  # fmt: skip
            return
        time.sleep(1)
    raise SystemExit(f"{job} did not read up to {final} within 300 s")


def oracle_text(journals: list[Path], url: str) -> str:
    """The store at ``url`` against the batch recomputation from ``journals``: ``vehicles N
    lost / N extra / N different; windows ... (of N)``."""
    good = valid_pings([r for journal in journals for r in read_journal(journal)])
    engine = store.engine_for(url)
    veh = compare_vehicles(latest_per_vin(good), store.read_table(engine, store.vehicles))
    win = compare_windows(tumbling_windows(good), store.read_table(engine, store.vehicle_stats))
    return (
        f"vehicles {len(veh.missing)} lost / {len(veh.unexpected)} extra / "
        f"{len(veh.different)} different; windows {len(win.missing)} lost / "
        f"{len(win.unexpected)} extra / {len(win.different)} different (of {win.expected})"
    )


@dataclass
class FleetWorkload:
    """Both simulators at ``rate`` pings/s each under ``work``, and the store there."""

    work: Path
    alpha: AlphaSimulator
    beta: BetaProcess

    @classmethod
    def create(cls, work: Path, rate: float) -> FleetWorkload:
        work.mkdir(parents=True)
        alpha = AlphaSimulator(work / "alpha", seed=5, rate=rate, journal=work / "a.jsonl")
        beta = BetaProcess(free_port(), work / "beta-log", work / "b.jsonl", work / "beta.log",
                           seed=6, vehicles=100, rate=rate, malformed_every=0)  # fmt: skip
        return cls(work, alpha, beta)

    @property
    def url(self) -> str:
        return f"sqlite:///{self.work / 'fleet.db'}"

    def start(self) -> None:
        self.beta.start()
        self.alpha.start()

    def spec(self, job: str, conf: dict[str, str] | None = None) -> JobSpec:
        """fleet-pings v1 as ``job``, trigger 1 s, on these simulators and store, holding no
        stream back at its sources (:data:`harness.NO_HOLDBACK`: the benchmarks on this
        workload measure gaps)."""
        data = {"alpha_dir": str(self.work / "alpha"), "beta_url": self.beta.url,
                "store_url": self.url, **NO_HOLDBACK}  # fmt: skip
        return fleet_spec("fleet-pings.yaml", job, "1 second", data, conf)

    def check(self, settings: Settings, job: str) -> str:
        """Stop the data, wait until ``job`` read all of it, compare: ``oracle: ...``."""
        self.alpha.stop()
        self.beta.stop()  # generation ends; started again on its log, it serves what it emitted
        self.beta.start(max_pings=0)
        last = int(self.beta.head()["last"])
        wait_caught_up(JobRegistry(settings), job, self.work / "alpha", last)
        journals = [self.work / "a.jsonl", self.work / "b.jsonl"]
        return f"oracle: {oracle_text(journals, self.url)}"

    def stop(self) -> None:
        self.alpha.stop()
        self.beta.stop()
