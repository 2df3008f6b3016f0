"""The trade analyser's windows against the batch oracle, on a local SparkSession.

The job's own code end to end: fleetsim-beta's server (:class:`PingHistory` + the FastAPI app)
serves known trades, the ``fleet_beta`` source reads them, :func:`parse_trades` and
:func:`windowed` (or :func:`frames`, ``avg-1m``) aggregate them, their sinks upsert into a temp
SQLite store and the runtime's :class:`StatusBoard` counts the late rows. Two batches: the
second carries trades behind the watermark (dropped for the closed windows, counted), within
it (applied) and a trade whose windows are partly closed.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession
from support.oracle import compare_series, trade_windows

from spark_jobs import trade_analyser as ta
from spark_jobs.runtime.context import JobContext
from spark_jobs.runtime.describe import describe_job_stages
from spark_jobs.runtime.status import StatusBoard
from spark_jobs.sliding_frames import frames, frames_writer
from streamops.planner import StageAction, UpgradePlan
from streamops.sim.beta import PingHistory
from streamops.sim.market import Market, Trade
from streamops.spec import load_spec
from streamops.state.layout import StateLayout
from streamops_contract.sinks import store

CONFIG = Path(__file__).resolve().parents[3] / "config" / "jobs"
T0 = 1_700_000_000.0  # a whole second: window boundaries at T0 + k * slide
LAG_MS = 2000


def first_batch() -> list[Trade]:
    """~1200 trades of 4 symbols over 6 s, with trades exactly on window boundaries."""
    market = Market(11, symbols=4)
    trades = [market.next_trade(i, T0 + 0.005 * i) for i in range(1, 1200)]
    boundary = [
        Trade(1200, trades[0].symbol, T0 + 1.2, 100.0, 7),
        Trade(1201, "ZZZ", T0 + 2.0, 5.0, 3),
    ]
    return trades + boundary


def second_batch(first: list[Trade]) -> list[Trade]:
    """The watermark is now max(first) - 2 s = T0 + 3.995: late, partly late, in time."""
    a, b = first[0].symbol, first[1].symbol
    late = [
        Trade(1202, a, T0 + 1.5, 1000.0, 1000),  # every window closed: dropped, counted
        Trade(1203, b, T0 + 3.5, 1000.0, 1000),  # windows ending 3.6, 3.8 closed; 4.0.. open
        Trade(1204, a, T0 + 4.5, 1000.0, 1000),  # behind the newest, within the lag: applied
    ]
    market = Market(12, symbols=4)
    on_time = [market.next_trade(1205 + i, T0 + 6.0 + 0.01 * i) for i in range(100)]
    return late + on_time


@pytest.fixture
def server(serve_history: Any) -> Iterator[tuple[PingHistory, str]]:
    with serve_history("trades-test", "tradesim") as served:
        yield served


@pytest.mark.parametrize("series", [ta.AVG_1S, ta.VOL_1S, ta.AVG_1M], ids=lambda s: s.name)
def test_windows_equal_the_oracle_with_late_trades(
    spark: SparkSession, server: tuple[PingHistory, str], tmp_path: Path, series: ta.Series
) -> None:
    history, url = server
    store_url = f"sqlite:///{tmp_path / 'trades.db'}"
    spark.dataSource.register(ta.BetaDataSource)
    raw = (
        spark.readStream.format("fleet_beta").option("url", url).option("start_sequence", "0")
        .option("fields", ta.TRADE_FIELDS)
    )
    trades, lag = ta.parse_trades(raw.load()), f"{LAG_MS // 1000} seconds"
    if series.by_frames:
        frame, sink = frames(trades, series, lag), frames_writer(series, store_url)
    else:
        frame, sink = ta.windowed(trades, series, lag), ta.series_writer(store_url)
    query = (
        frame.writeStream.outputMode("update")
        .foreachBatch(sink)
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .queryName(series.name)
        .start()
    )
    batches = [first_batch()]
    batches.append(second_batch(batches[0]))
    board = StatusBoard(StateLayout.at(tmp_path / "state"), "trade-analyser", {})
    try:
        for batch in batches:
            history.extend(batch[0].sequence, [t.to_json() for t in batch])
            query.processAllAvailable()
        for progress in query.recentProgress:
            board.record_progress(json.loads(progress.json))
    finally:
        query.stop()

    expected = trade_windows(
        batches, series=series.name, size_ms=series.size_ms, slide_ms=series.slide_ms,
        measure=series.measure, lag_ms=LAG_MS, by_frames=series.by_frames,
    )  # fmt: skip
    rows = store.read_table(store.engine_for(store_url), store.trade_series)
    result = compare_series(expected.windows, rows)
    assert result.ok, result.summary()
    assert expected.dropped  # the test does exercise late trades, dropped and applied
    late_rows = board.snapshot().stages[series.name].late_rows
    assert late_rows == len(expected.dropped)


def test_v1_restores_into_v2_by_the_planner(spark: SparkSession, tmp_path: Path) -> None:
    """v2 keeps v1's ``avg-1s`` as it is (state restored) and adds two stateful stages."""
    described = {}
    (tmp_path / "state").mkdir()  # where the spec's store lives
    for version in ("v1", "v2"):
        spec = load_spec(CONFIG / f"trade-analyser-{version}.yaml")
        ctx = JobContext(spark, spec, StateLayout.at(tmp_path / "state"))
        importlib.import_module(spec.entrypoint).build(ctx)
        described[version] = describe_job_stages(ctx)
    assert list(described["v1"]) == ["avg-1s"]
    assert list(described["v2"]) == ["avg-1s", "avg-1m", "vol-1s"]
    plan = UpgradePlan.build(
        "trade-analyser", described["v1"], described["v2"], from_version="1", to_version="2"
    )
    assert plan.allowed, plan.render()
    assert plan.stage("avg-1s").action is StageAction.RESTORE, plan.render()
    assert all(d["stateful"] for d in described["v2"].values())
