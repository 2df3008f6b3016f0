"""fleet-pings sinks write the store, and write nothing when built for a rehearsal."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from pyspark.sql import SparkSession
from support.beta_rows import beta_frame

from spark_jobs import fleet_pings, pings
from spark_jobs.sinks import store

GOOD = {"vin": "1HGCM82633A004352", "time": 1_700_000_000.0, "latitude": 50.0,
        "longitude": 8.0, "speed": 42.0, "heading": 90.0}  # fmt: skip


def ctx_for(url: str, rehearsal: bool) -> Any:
    return SimpleNamespace(args={"store_url": url}, job="fleet", rehearsal=rehearsal,
                           spec=SimpleNamespace(version="1"))  # fmt: skip


@pytest.mark.parametrize("rehearsal", [False, True])
def test_vehicles_sink_writes_only_outside_a_rehearsal(
    spark: SparkSession, tmp_path: Path, rehearsal: bool
) -> None:
    url = f"sqlite:///{tmp_path / 'fleet.db'}"
    records = [(1, json.dumps({**GOOD, "sequence": 1})), (2, "not json")]
    batch = pings.from_beta(beta_frame(spark, records))
    fleet_pings.vehicles_sink(ctx_for(url, rehearsal))(batch, 0)
    engine = store.engine_for(url)
    vehicles = store.read_table(engine, store.vehicles)
    quarantined = store.read_table(engine, store.quarantine)
    if rehearsal:
        assert vehicles == [] and quarantined == []
    else:
        assert [v["vin"] for v in vehicles] == [GOOD["vin"]] and len(quarantined) == 1


def test_one_aggregation_gives_the_newest_ping_per_vin_and_every_invalid_record(
    spark: SparkSession,
) -> None:
    other = "2HGCM82633A004353"
    records = [
        (1, json.dumps({**GOOD, "sequence": 1, "speed": 1.0})),
        (2, json.dumps({**GOOD, "sequence": 2, "speed": 2.0})),  # same time, later sequence
        (3, json.dumps({**GOOD, "sequence": 3, "time": GOOD["time"] - 5, "speed": 3.0})),  # older
        (4, json.dumps({**GOOD, "vin": other, "sequence": 4, "speed": 4.0})),
        (5, json.dumps({**GOOD, "sequence": 5, "speed": 999.0})),  # invalid: not in vehicles
        (6, "not json"),
    ]
    batch = pings.from_beta(beta_frame(spark, records))
    rows = [r.asDict() for r in fleet_pings.latest_and_invalid(batch).collect()]
    latest = {r["vin"]: (r["sequence"], r["speed"]) for r in rows if r["reason"] is None}
    bad = sorted((r["position"], r["reason"]) for r in rows if r["reason"] is not None)
    assert latest == {GOOD["vin"]: (2, 2.0), other: (4, 4.0)}
    assert bad == [("5", "speed is not a number in [0, 500]"), ("6", "not a JSON object")]
