"""fleet-pings v2's ``trips`` stage (session windows) against the batch oracle, streaming on a
local SparkSession: fleetsim-beta's server serves known pings, the job's own parse, the
``trips`` frame and sink write into a temp SQLite store.

Three vehicles, event-time gaps of 20 minutes between bursts, a 5-minute gap and a 2-minute
watermark: a trip is written only once the watermark passes its last ping plus the gap, once,
with its start, end, pings, speeds and distance; the trip still going is not written; a ping
arriving late but within the watermark joins its trip.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession
from support.oracle import compare_trips, ended_trips

from spark_jobs import fleet_pings_v2, pings
from spark_jobs.sources.beta import BetaDataSource
from streamops.sim.beta import PingHistory
from streamops.sim.fleet import Ping
from streamops_contract.sinks import store

T0 = 1_700_000_000.0
GAP_S, LAG_S = 300.0, 120.0
VINS = ("1HGCM82633A000001", "1HGCM82633A000002", "1HGCM82633A000003")


def burst(seq: int, vin: str, start: float, n: int, speed: float) -> list[Ping]:
    """``n`` pings of ``vin`` 10 s apart from ``start``."""
    return [Ping(seq + i, vin, start + 10 * i, 41.0 + i / 1000, -93.0, speed + i, 90.0)
            for i in range(n)]  # fmt: skip


@pytest.fixture
def server(serve_history: Any) -> Iterator[tuple[PingHistory, str]]:
    with serve_history("trips-test", "fleetsim-beta") as served:
        yield served


def test_trips_are_written_once_ended_and_equal_the_oracle(
    spark: SparkSession, server: tuple[PingHistory, str], tmp_path: Path
) -> None:
    history, url = server
    store_url = f"sqlite:///{tmp_path / 'fleet.db'}"
    store.engine_for(store_url)
    spark.dataSource.register(BetaDataSource)
    raw = spark.readStream.format("fleet_beta").option("url", url).option("start_sequence", "0")
    raw = raw.options(**pings.BETA_OPTIONS)
    frame = fleet_pings_v2.trips(
        pings.valid(pings.from_beta(raw.load())), f"{LAG_S:.0f} seconds", f"{GAP_S:.0f} seconds"
    )
    ctx = type("Ctx", (), {"args": {"store_url": store_url}, "rehearsal": False})()
    query = (
        frame.writeStream.outputMode("append")
        .foreachBatch(fleet_pings_v2.trips_sink(ctx))  # type: ignore[arg-type]
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .start()
    )
    a, b, c = VINS
    batches = [
        # trips of a and b begin; c's first trip is one ping
        burst(1, a, T0, 7, 30.0) + burst(8, b, T0 + 5, 4, 50.0) + burst(12, c, T0, 1, 10.0),
        # 20 minutes later a drives again: the watermark (T0 + 1260 - 120) ends every trip
        # above; a ping of b 2 minutes behind the newest, within its trip's gap, arrives late
        burst(13, a, T0 + 1200, 7, 40.0) + [Ping(20, b, T0 + 40, 41.0, -93.0, 90.0, 90.0)],
    ]
    seen: list[list[dict]] = []
    try:
        for batch in batches:
            history.extend(batch[0].sequence, [p.to_json() for p in batch])
            query.processAllAvailable()
            seen.append(store.read_table(store.engine_for(store_url), store.trips))
    finally:
        query.stop()

    assert seen[0] == [], "no trip has ended after the first batch"
    everything = [p for batch in batches for p in batch]
    watermark = max(p.time for p in everything) - LAG_S
    expected = ended_trips(everything, GAP_S, watermark)
    assert sorted(expected) == [(a, T0), (b, T0 + 5), (c, T0)]  # a's second trip goes on
    assert expected[(b, T0 + 5)].pings == 5  # the late ping joined b's trip
    result = compare_trips(expected, seen[-1])
    assert result.ok, result.summary()
    trip = next(r for r in seen[-1] if r["vin"] == a)
    assert trip["distance_mi"] == pytest.approx(33.0 * 60 / 3600)  # mean 33 mph for 60 s
