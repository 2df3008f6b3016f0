"""fleet-pings sinks write the store, and write nothing when built for a rehearsal."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from pyspark.sql import SparkSession
from support.beta_rows import beta_frame
from support.source_rows import read_rows

from spark_jobs import fleet_pings, pings
from spark_jobs.sources.alpha import ALPHA_SCHEMA, AlphaFiles, AlphaStreamReader
from streamops.sim.alpha import file_name
from streamops.sim.fleet import Fleet
from streamops_contract.sinks import store

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


def test_an_alpha_line_with_invalid_utf8_goes_to_quarantine_with_its_reason(
    spark: SparkSession, tmp_path: Path
) -> None:
    """A CSV line with bytes that are not UTF-8 is read with U+FFFD in their place, and then
    quarantined as such: never taken as a ping (here the bytes sit in an OBD code, where the
    rest of the validation would have let the replaced text through)."""
    fleet = Fleet(seed=3, vehicles=2)
    good = fleet.next_ping(1, 1_700_000_000.0)
    bad = dataclasses.replace(fleet.next_ping(2, 1_700_000_001.0), obd_codes=("P0171",))
    line = bad.to_csv().encode().replace(b"P0171", b"P0\xff71")
    drop = tmp_path / "drop"
    drop.mkdir()
    (drop / file_name(1)).write_bytes(good.to_csv().encode() + b"\n" + line + b"\n")
    reader = AlphaStreamReader({"path": str(drop)})
    rows = read_rows(reader, AlphaFiles([file_name(1)]))
    url = f"sqlite:///{tmp_path / 'fleet.db'}"
    batch = pings.from_alpha(spark.createDataFrame(rows, ALPHA_SCHEMA))
    fleet_pings.vehicles_sink(ctx_for(url, False))(batch, 0)
    engine = store.engine_for(url)
    vehicles = store.read_table(engine, store.vehicles)
    quarantined = store.read_table(engine, store.quarantine)
    assert [(v["vin"], v["sequence"]) for v in vehicles] == [(good.vin, 1)]
    (row,) = quarantined
    assert (row["source"], row["position"]) == ("alpha", f"{file_name(1)}:2")
    assert row["reason"] == pings.INVALID_UTF8
    assert row["raw"] == line.decode("utf-8", "replace")  # the text, bytes replaced by U+FFFD
    assert "P0\ufffd71" in row["raw"]
