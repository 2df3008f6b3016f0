"""The chaos world's second job: the operator tutorial's ``transactions`` job (the journal
source) beside fleet-pings, small (one executor core) at a low rate, with its producer
writing every entry it journals into a record file. Its oracle is the transactions tests'
(:func:`support.journal_oracle.compare_logged`): every entry written is in
``transaction_log`` exactly once, as written."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from support.journal_oracle import compare_logged, wait_logged
from support.oracle import Comparison

from streamops.sim.transactions import TransactionSimulator, read_records
from streamops.spec import JobSpec, load_spec
from streamops_contract.sinks import journal_store

CONFIG = Path(__file__).resolve().parents[3] / "config" / "jobs"
STAGES = ("transaction-log",)


@dataclass
class JournalJob:
    workdir: Path
    name: str = "transactions-chaos"
    rate: float = 5.0
    seed: int = 33
    producer: TransactionSimulator | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        self.store_url = f"sqlite:///{self.workdir / 'transactions.db'}"
        self.record_file = self.workdir / "transactions.jsonl"
        self._runs = 0

    def spec(self) -> JobSpec:
        base = load_spec(CONFIG / "transactions.yaml")
        resources = base.resources.model_copy(update={"executor_cores": 1, "max_cores": 1})
        return base.model_copy(update={"name": self.name, "resources": resources,
                                       "args": {**base.args, "store_url": self.store_url}})

    # -- the producer ----------------------------------------------------------------------
    def start(self) -> None:
        """The producer, writing on (the journal's sequence goes on after a stop)."""
        self._runs += 1
        self.producer = TransactionSimulator(self.store_url, rate=self.rate,
                                             seed=self.seed + self._runs,
                                             journal=self.record_file)  # fmt: skip
        self.producer.start()

    def stop(self) -> None:
        if self.producer is not None:
            self.producer.stop()
            self.producer = None

    def hold(self) -> int:
        """Stop the producer; the last entry written (what the job must log up to)."""
        self.stop()
        written = read_records(self.record_file) if self.record_file.is_file() else []
        return written[-1].sequence if written else 0

    # -- the oracle ------------------------------------------------------------------------
    @property
    def engine(self) -> Any:
        return journal_store.engine_for(self.store_url, journal_store.LOG_TABLES)

    def wait_caught_up(self, last: int, describe: Any, timeout: float = 240) -> None:
        if last:
            wait_logged(self.engine, last, describe=describe, timeout=timeout)

    def compare(self, last: int) -> Comparison:
        return compare_logged(self.engine, self.record_file, last, lambda n: "1")
