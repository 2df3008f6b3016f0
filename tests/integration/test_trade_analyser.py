"""The trade analyser on the real local cluster: v1 → v2 while 10k trades/s flow, checked
against the producer's journal.

The trades producer runs (fleetsim-beta's server, :mod:`streamops.sim.trades`) → v1 is
submitted and reads for a while → upgraded to v2 with the project's upgrade (planned, savepoint,
warm start) while trades still flow → after the producer stops and every stage has read up to
its end: every ``avg-1s`` window equals the recomputation over all trades (v1's state went on
in v2), and ``avg-1m`` / ``vol-1s`` equal the recomputation over the trades after the
savepoint's position (the new stages start there, with empty state). The producer's event
times never go back, so nothing is late. A full cluster restart that restores a running job
from its savepoint is the multi-host module's jar swap (``cluster_restart`` through Airflow);
the warm one, the cluster DAGs'. Marked ``slow`` (in the default run; alone:
``./scripts/test.sh -m slow``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from support.integration import ClusterHandle, describe_job, wait_until
from support.oracle import compare_series, trade_windows

from spark_jobs import trade_analyser as ta
from spark_jobs.runtime.savepointing import committed_offsets
from streamops.procedures.upgrade import plan_upgrade, upgrade
from streamops.sim.journal import read_journal, valid_trades
from streamops.sim.trades import TradeSimulator
from streamops.spec import JobSpec, load_spec
from streamops.state.job_status import StageStatus
from streamops.state.savepoints import catalogue
from streamops.world.restore import earliest_positions
from streamops.world.submit import submit_job
from streamops_contract.sinks import store
from streamops_contract.state.checkpoint_cut import last_batch

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(1800)]
JOB = "trade-analyser-it"
CONFIG = Path(__file__).resolve().parents[2] / "config" / "jobs"
RATE = 10_000
TRADES = 600_000  # 60 s of trades: v1 runs, the upgrade happens, v2 runs


def spec(file: str, producer: TradeSimulator, store_url: str) -> JobSpec:
    base = load_spec(CONFIG / file)
    args = {**base.args, "trades_url": producer.url, "store_url": store_url}
    return base.model_copy(update={"name": JOB, "args": args})


def committed_sequences(cluster: ClusterHandle, stages: Any) -> dict[str, int | None]:
    """Per stage, the trades producer's sequence in its last committed batch."""
    layout = cluster.settings.layout
    out: dict[str, int | None] = {}
    for stage in stages:
        checkpoint = layout.checkpoint(JOB, stage)
        offsets = committed_offsets(checkpoint, last_batch(checkpoint / "commits"))
        found = [int(o["sequence"]) for o in offsets if o.get("source") == ta.SOURCE_ID]
        out[stage] = found[0] if found else None
    return out


def test_v1_upgraded_to_v2_while_trades_flow(
    spark_cluster: ClusterHandle, tmp_path: Path
) -> None:
    settings, registry = spark_cluster.settings, spark_cluster.registry
    store_url = f"sqlite:///{tmp_path / 'trades.db'}"
    journal = tmp_path / "trades.jsonl"
    producer = TradeSimulator(
        port=0, seed=1, rate=RATE, max_trades=TRADES, history=TRADES, journal=journal,
        data_dir=tmp_path / "tradesim",
    )  # fmt: skip
    producer.start()
    try:
        submit_job(spec("trade-analyser-v1.yaml", producer, store_url), settings, wait_healthy=300)
        wait_until(lambda: producer.emitted > TRADES // 3, 300, "a third of the trades")
        v2 = spec("trade-analyser-v2.yaml", producer, store_url)
        plan = plan_upgrade(settings, JOB, v2)
        assert plan.allowed, plan.render()
        outcome = upgrade(settings, JOB, v2, health_timeout=300, warm=True)
        assert registry.view(JOB).version == "2"
        manifest = catalogue.get_savepoint(settings.layout, outcome.savepoint)
        assert set(manifest.stages) == {"avg-1s"}
        position = int(earliest_positions(manifest)[ta.SOURCE_ID]["sequence"])
        flowing = producer.emitted < TRADES
        print(f"upgraded {'while trades flowed' if flowing else 'after the last trade'}")

        assert producer.wait_done(600)
        stages = ("avg-1s", "avg-1m", "vol-1s")
        wait_until(
            lambda: all(
                seq == TRADES for seq in committed_sequences(spark_cluster, stages).values()
            ),
            600,
            f"{JOB} to read all {TRADES} trades",
            describe=lambda: describe_job(registry.view(JOB)),
        )

        trades = valid_trades(read_journal(journal))
        assert [t.sequence for t in trades] == list(range(1, TRADES + 1))
        after = [t for t in trades if t.sequence > position]
        rows = store.read_table(store.engine_for(store_url), store.trade_series)
        for series, source in ((ta.AVG_1S, trades), (ta.AVG_1M, after), (ta.VOL_1S, after)):
            expected = trade_windows(
                [source], series=series.name, size_ms=series.size_ms,
                slide_ms=series.slide_ms, measure=series.measure,
            )  # fmt: skip
            result = compare_series(
                expected.windows, [r for r in rows if r["series"] == series.name], series.name
            )
            assert result.ok, result.summary()
        late = {
            name: (registry.view(JOB).stages.get(name) or StageStatus()).late_rows
            for name in stages
        }
        assert all(not n for n in late.values()), late  # in-order event times: nothing late
    finally:
        producer.stop()
        spark_cluster.let_go(JOB)
