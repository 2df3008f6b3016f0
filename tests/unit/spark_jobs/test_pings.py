"""Parsing and validation of fleet pings in Spark expressions, on one real local SparkSession.

Every case runs through :func:`spark_jobs.pings.from_alpha` / ``from_beta`` on batch
DataFrames in the sources' own schemas. The cases of each source are evaluated in one Spark
job (a module fixture) and the tests look up their row, which keeps the module fast.
Records come from the real fleet and simulators, so the formats agree with what the job
reads in production.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest
from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql import functions as F
from support.beta_rows import beta_frame

from spark_jobs import pings
from spark_jobs.sources.alpha import ALPHA_SCHEMA
from streamops.sim.alpha import ALPHA_MALFORMED_KINDS, AlphaSimulator
from streamops.sim.beta import BETA_MALFORMED_KINDS, BetaSimulator
from streamops.sim.fleet import Fleet, Ping
from streamops.sim.journal import JournalRecord, read_journal

CASE_FILE = "pings-000000000001.csv"
SIM_PINGS = 400
SIM_MALFORMED_EVERY = 5  # kinds rotate every 5th record: each kind appears 20 times

NOT_JSON = "not a JSON object"
COLUMNS = "expected 8 comma-separated fields"
SEQUENCE = "sequence is not an integer"
VIN_MISSING = "vin is missing"
VIN_BAD = "vin is not 17 VIN characters"
TIME = "time is not epoch seconds in (0, 1e11]"
LATITUDE = "latitude is not a number in [-90, 90]"
LONGITUDE = "longitude is not a number in [-180, 180]"
SPEED = "speed is not a number in [0, 500]"
HEADING = "heading is not a number in [0, 360)"
OBD = "obd_codes is not a list of strings"

BASE: Ping = dataclasses.replace(
    Fleet(seed=7, vehicles=3).next_ping(41, 1_700_000_000.125), obd_codes=("P0171", "P0420")
)
"""A real fleet ping, given two OBD codes (the fleet raises codes only rarely)."""


def csv_with(**fields: str) -> str:
    """The alpha CSV line of :data:`BASE` with some columns replaced by raw text."""
    cols = dict(zip(pings.FIELDS, BASE.to_csv().split(","), strict=True))
    cols.update(fields)
    return ",".join(cols.values())


def json_with(drop: tuple[str, ...] = (), **fields: Any) -> str:
    """The beta JSON text of :data:`BASE` with some fields replaced or dropped."""
    data = {**BASE.to_dict(), **fields}
    for name in drop:
        del data[name]
    return json.dumps(data, separators=(",", ":"))


ALPHA_CASES: dict[str, tuple[str, str | None]] = {
    "valid_8_columns_with_codes": (BASE.to_csv(), None),
    "valid_8_columns_no_codes": (dataclasses.replace(BASE, obd_codes=()).to_csv(), None),
    "valid_padded_fields": (csv_with(sequence=" 41 ", vin=f" {BASE.vin} ", speed=" 12.5"), None),
    "valid_lower_bounds": (csv_with(latitude="-90", longitude="-180", speed="0", heading="0"),
                           None),
    "valid_upper_bounds": (csv_with(latitude="90", longitude="180", speed="500",
                                    heading="359.9", time="1e11"), None),
    "one_column": ("garbage", COLUMNS),
    "six_columns": (",".join(BASE.to_csv().split(",")[:6]), COLUMNS),
    "seven_columns_without_codes": (",".join(BASE.to_csv().split(",")[:7]), COLUMNS),
    "nine_columns": (BASE.to_csv() + ",extra", COLUMNS),
    "sequence_word": (csv_with(sequence="abc"), SEQUENCE),
    "sequence_decimal": (csv_with(sequence="1.5"), SEQUENCE),
    "sequence_empty": (csv_with(sequence=""), SEQUENCE),
    "sequence_too_big_for_long": (csv_with(sequence="99999999999999999999"), SEQUENCE),
    "vin_empty": (csv_with(vin=""), VIN_MISSING),
    "vin_blank": (csv_with(vin="   "), VIN_MISSING),
    "vin_too_short": (csv_with(vin=BASE.vin[:16]), VIN_BAD),
    "vin_too_long": (csv_with(vin=BASE.vin + "1"), VIN_BAD),
    "vin_with_letter_o": (csv_with(vin="O" + BASE.vin[1:]), VIN_BAD),
    "vin_lowercase": (csv_with(vin=BASE.vin.lower()), VIN_BAD),
    "time_word": (csv_with(time="soon"), TIME),
    "time_empty": (csv_with(time=""), TIME),
    "time_zero": (csv_with(time="0"), TIME),
    "time_negative": (csv_with(time="-5"), TIME),
    "time_huge": (csv_with(time="1e20"), TIME),
    "time_nan": (csv_with(time="NaN"), TIME),
    "time_infinity": (csv_with(time="Infinity"), TIME),
    "latitude_above": (csv_with(latitude="90.000001"), LATITUDE),
    "latitude_below": (csv_with(latitude="-123"), LATITUDE),
    "latitude_word": (csv_with(latitude="north"), LATITUDE),
    "latitude_nan": (csv_with(latitude="NaN"), LATITUDE),
    "longitude_above": (csv_with(longitude="180.5"), LONGITUDE),
    "longitude_below": (csv_with(longitude="-181"), LONGITUDE),
    "longitude_word": (csv_with(longitude="west"), LONGITUDE),
    "speed_negative": (csv_with(speed="-0.1"), SPEED),
    "speed_above": (csv_with(speed="500.1"), SPEED),
    "speed_word": (csv_with(speed="fast"), SPEED),
    "heading_360": (csv_with(heading="360"), HEADING),
    "heading_negative": (csv_with(heading="-1"), HEADING),
    "heading_word": (csv_with(heading="north"), HEADING),
    "first_broken_rule_wins": (csv_with(vin="short", latitude="123", speed="fast"), VIN_BAD),
}  # fmt: skip

BETA_CASES: dict[str, tuple[str, str | None]] = {
    "valid_with_codes": (BASE.to_json(), None),
    "valid_without_codes": (dataclasses.replace(BASE, obd_codes=()).to_json(), None),
    "valid_obd_codes_absent": (json_with(drop=("obd_codes",)), None),
    "valid_obd_codes_null": (json_with(obd_codes=None), None),
    "valid_bounds": (json_with(latitude=-90, longitude=180, speed=500, heading=0), None),
    "valid_numbers_as_text": (json_with(speed="12.5", heading=" 90"), None),
    "vin_absent": (json_with(drop=("vin",)), VIN_MISSING),
    "vin_null": (json_with(vin=None), VIN_MISSING),
    "vin_empty": (json_with(vin=""), VIN_MISSING),
    "vin_bad": (json_with(vin="1F-NOT-A-VIN"), VIN_BAD),
    "vin_number": (json_with(vin=12345), VIN_BAD),
    "time_word": (json_with(time="soon"), TIME),
    "time_absent": (json_with(drop=("time",)), TIME),
    "time_huge": (json_with(time=1e20), TIME),
    "time_negative": (json_with(time=-1.5), TIME),
    "latitude_word": (json_with(latitude="north"), LATITUDE),
    "latitude_out_of_range": (json_with(latitude=123.0), LATITUDE),
    "longitude_out_of_range": (json_with(longitude=-200.0), LONGITUDE),
    "longitude_absent": (json_with(drop=("longitude",)), LONGITUDE),
    "speed_negative": (json_with(speed=-3), SPEED),
    "speed_word": (json_with(speed="fast"), SPEED),
    "heading_360": (json_with(heading=360.0), HEADING),
    "heading_list": (json_with(heading=[1]), HEADING),
    "obd_codes_string": (json_with(obd_codes="P0300"), OBD),
    "obd_codes_object": (json_with(obd_codes={"code": "P0300"}), OBD),
    "obd_codes_number": (json_with(obd_codes=7), OBD),
}  # fmt: skip

BETA_NOT_JSON_CASES: dict[str, str] = {
    "not_json_word": "nope",
    "not_json_truncated": BASE.to_json()[:40],
    "json_array": "[1,2,3]",
    "json_string": '"a string"',
    "json_null": "null",
    "json_number": "42",
}


def alpha_frame(spark: SparkSession, lines: list[tuple[str, int, str]]) -> DataFrame:
    """fleet_alpha's rows of ``(file, line, raw)`` lines that were UTF-8."""
    return spark.createDataFrame([(*line, False) for line in lines], ALPHA_SCHEMA)


def alpha_rows(spark: SparkSession, lines: list[tuple[str, int, str]]) -> dict[str, Row]:
    """``from_alpha`` over ``(file, line, raw)`` rows, collected by position."""
    result = pings.from_alpha(alpha_frame(spark, lines))
    return {row.position: row for row in result.collect()}


def beta_rows(
    spark: SparkSession, records: list[tuple[int, str]], alone: bool = False
) -> dict[int, Row]:
    """``from_beta`` over the source's rows of ``(sequence, raw)`` records (parsed as one
    partition, or each alone), collected by sequence."""
    result = pings.from_beta(beta_frame(spark, records, alone))
    return {row.sequence: row for row in result.collect()}


@pytest.fixture(scope="module")
def alpha_cases(spark: SparkSession) -> dict[str, Row]:
    names = list(ALPHA_CASES)
    lines = [(CASE_FILE, i + 1, ALPHA_CASES[n][0]) for i, n in enumerate(names)]
    rows = alpha_rows(spark, lines)
    return {n: rows[f"{CASE_FILE}:{i + 1}"] for i, n in enumerate(names)}


@pytest.fixture(scope="module", params=[False, True], ids=["one-partition", "each-alone"])
def beta_cases(spark: SparkSession, request: pytest.FixtureRequest) -> dict[str, Row]:
    """Every case, parsed by the source in one partition (a malformed record among them
    sends them all through its one-at-a-time parse) or each in a partition of its own (a
    well-formed one then comes typed from the source's Arrow parse)."""
    names = [*BETA_CASES, *BETA_NOT_JSON_CASES]
    raws = {**{n: raw for n, (raw, _) in BETA_CASES.items()}, **BETA_NOT_JSON_CASES}
    rows = beta_rows(spark, [(1000 + i, raws[n]) for i, n in enumerate(names)], request.param)
    return {n: rows[1000 + i] for i, n in enumerate(names)}


def assert_same_ping(row: Row, ping: Ping) -> None:
    assert row.reason is None, row.raw
    assert (row.sequence, row.vin, row.time) == (ping.sequence, ping.vin, ping.time)
    assert (row.latitude, row.longitude) == (ping.latitude, ping.longitude)
    assert (row.speed, row.heading) == (ping.speed, ping.heading)
    assert row.obd_codes == list(ping.obd_codes)
    assert row.event_time is not None
    assert row.event_time.timestamp() == pytest.approx(ping.time, abs=1e-3)


# --- alpha ---------------------------------------------------------------------------------
def test_alpha_output_has_the_ping_columns(spark: SparkSession) -> None:
    result = pings.from_alpha(spark.createDataFrame([], ALPHA_SCHEMA))
    assert tuple(result.columns) == pings.PING_COLUMNS


def test_alpha_valid_8_columns_splits_obd_codes(alpha_cases: dict[str, Row]) -> None:
    row = alpha_cases["valid_8_columns_with_codes"]
    assert_same_ping(row, BASE)
    assert row.obd_codes == ["P0171", "P0420"]
    assert (row.source, row.position) == ("alpha", f"{CASE_FILE}:1")
    assert row.raw == BASE.to_csv()


def test_alpha_valid_8_columns_without_codes(alpha_cases: dict[str, Row]) -> None:
    assert_same_ping(
        alpha_cases["valid_8_columns_no_codes"], dataclasses.replace(BASE, obd_codes=())
    )


def test_alpha_fields_are_trimmed(alpha_cases: dict[str, Row]) -> None:
    row = alpha_cases["valid_padded_fields"]
    assert (row.reason, row.sequence, row.vin, row.speed) == (None, 41, BASE.vin, 12.5)


@pytest.mark.parametrize("case", sorted(n for n, (_, why) in ALPHA_CASES.items() if why is None))
def test_alpha_valid_cases_have_no_reason(alpha_cases: dict[str, Row], case: str) -> None:
    row = alpha_cases[case]
    assert row.reason is None
    assert row.event_time is not None


@pytest.mark.parametrize("case", sorted(n for n, (_, why) in ALPHA_CASES.items() if why))
def test_alpha_rejections(alpha_cases: dict[str, Row], case: str) -> None:
    raw, reason = ALPHA_CASES[case]
    row = alpha_cases[case]
    assert row.reason == reason
    assert row.event_time is None
    assert row.raw == raw
    assert row.source == "alpha"


def test_huge_time_does_not_fail_the_batch_under_ansi(
    spark: SparkSession, alpha_cases: dict[str, Row]
) -> None:
    """The case batch (with ``1e20`` among valid lines) was collected under ANSI mode."""
    assert spark.conf.get("spark.sql.ansi.enabled") == "true"
    row = alpha_cases["time_huge"]
    assert (row.time, row.reason, row.event_time) == (1e20, TIME, None)
    assert alpha_cases["valid_8_columns_with_codes"].reason is None


def test_valid_and_invalid_split_the_rows(spark: SparkSession) -> None:
    lines = [("f", i + 1, raw) for i, (raw, _) in enumerate(ALPHA_CASES.values())]
    parsed = pings.from_alpha(alpha_frame(spark, lines))
    split = (
        pings.valid(parsed)
        .select(F.lit("valid").alias("kind"), "position")
        .unionByName(pings.invalid(parsed).select(F.lit("invalid").alias("kind"), "position"))
    )
    kinds = {row.position: row.kind for row in split.collect()}  # one Spark job
    expected = {
        f"f:{i + 1}": "valid" if why is None else "invalid"
        for i, (_, why) in enumerate(ALPHA_CASES.values())
    }
    assert kinds == expected


# --- beta ----------------------------------------------------------------------------------
def test_beta_output_has_the_ping_columns(spark: SparkSession) -> None:
    result = pings.from_beta(beta_frame(spark, []))
    assert tuple(result.columns) == pings.PING_COLUMNS


def test_beta_valid_record(beta_cases: dict[str, Row]) -> None:
    row = beta_cases["valid_with_codes"]
    # The position and sequence come from the server's framing, not from the JSON body.
    assert_same_ping(row, dataclasses.replace(BASE, sequence=row.sequence))
    assert (row.source, row.position, row.raw) == ("beta", str(row.sequence), BASE.to_json())


@pytest.mark.parametrize(
    "case", ["valid_without_codes", "valid_obd_codes_absent", "valid_obd_codes_null"]
)
def test_beta_without_codes_has_empty_list(beta_cases: dict[str, Row], case: str) -> None:
    row = beta_cases[case]
    assert row.reason is None
    assert row.obd_codes == []


def test_beta_bounds_are_valid(beta_cases: dict[str, Row]) -> None:
    row = beta_cases["valid_bounds"]
    assert row.reason is None
    assert (row.latitude, row.longitude, row.speed, row.heading) == (-90.0, 180.0, 500.0, 0.0)


def test_beta_numbers_as_text_count_as_numbers(beta_cases: dict[str, Row]) -> None:
    """Not typed by the source's parse: parsed from ``raw`` by the job, as always."""
    row = beta_cases["valid_numbers_as_text"]
    assert (row.reason, row.speed, row.heading) == (None, 12.5, 90.0)


@pytest.mark.parametrize("case", sorted(n for n, (_, why) in BETA_CASES.items() if why))
def test_beta_rejections(beta_cases: dict[str, Row], case: str) -> None:
    raw, reason = BETA_CASES[case]
    row = beta_cases[case]
    assert row.reason == reason
    assert row.event_time is None
    assert (row.source, row.raw) == ("beta", raw)


@pytest.mark.parametrize("case", sorted(BETA_NOT_JSON_CASES))
def test_beta_not_json_is_rejected(beta_cases: dict[str, Row], case: str) -> None:
    row = beta_cases[case]
    assert row.reason is not None
    assert row.event_time is None


@pytest.mark.parametrize("case", sorted(BETA_NOT_JSON_CASES))
def test_beta_not_json_reason(beta_cases: dict[str, Row], case: str) -> None:
    assert beta_cases[case].reason == NOT_JSON


# --- every record the simulators produce -------------------------------------------------
@pytest.fixture(scope="module")
def alpha_sim_run(
    tmp_path_factory: pytest.TempPathFactory, spark: SparkSession
) -> tuple[list[JournalRecord], dict[str, Row]]:
    """A real fleetsim-alpha run (every 5th line malformed): its journal and parsed rows."""
    root = tmp_path_factory.mktemp("alpha-sim")
    sim = AlphaSimulator(
        root / "drop", rate=100_000, max_pings=SIM_PINGS, pings_per_file=150,
        malformed_every=SIM_MALFORMED_EVERY, journal=root / "journal.jsonl",
    )  # fmt: skip
    sim.run()
    lines = [
        (path.name, number, text)
        for path in sorted((root / "drop").glob("pings-*.csv"))
        for number, text in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
    ]
    return read_journal(root / "journal.jsonl"), alpha_rows(spark, lines)


@pytest.fixture(scope="module")
def beta_sim_run(
    tmp_path_factory: pytest.TempPathFactory, spark: SparkSession
) -> tuple[list[JournalRecord], dict[int, Row]]:
    """A real fleetsim-beta run (every 5th record malformed): its journal and parsed rows."""
    journal = tmp_path_factory.mktemp("beta-sim") / "journal.jsonl"
    sim = BetaSimulator(
        port=0, rate=100_000, max_pings=SIM_PINGS, malformed_every=SIM_MALFORMED_EVERY,
        journal=journal,
    )  # fmt: skip
    sim.start()
    try:
        assert sim.wait_done(10)
        raws = sim.state.read(0, SIM_PINGS)
    finally:
        sim.stop()
    return read_journal(journal), beta_rows(spark, list(enumerate(raws, start=1)))


def alpha_position(record: JournalRecord, records: list[JournalRecord]) -> str:
    same_file = [r for r in records if r.file == record.file]
    return f"{record.file}:{same_file.index(record) + 1}"


def test_alpha_simulator_run_covers_every_kind(
    alpha_sim_run: tuple[list[JournalRecord], dict[str, Row]],
) -> None:
    records, rows = alpha_sim_run
    assert len(records) == len(rows) == SIM_PINGS
    assert {r.reason for r in records if r.malformed} == set(ALPHA_MALFORMED_KINDS)


def test_every_valid_alpha_simulator_ping_is_accepted(
    alpha_sim_run: tuple[list[JournalRecord], dict[str, Row]],
) -> None:
    records, rows = alpha_sim_run
    valid = [r for r in records if not r.malformed]
    assert len(valid) == SIM_PINGS - SIM_PINGS // SIM_MALFORMED_EVERY
    for record in valid:
        assert record.ping is not None
        assert_same_ping(rows[alpha_position(record, records)], record.ping)


@pytest.mark.parametrize("kind", ALPHA_MALFORMED_KINDS)
def test_every_malformed_alpha_kind_is_rejected(
    alpha_sim_run: tuple[list[JournalRecord], dict[str, Row]], kind: str
) -> None:
    records, rows = alpha_sim_run
    broken = [r for r in records if r.reason == kind]
    assert broken
    for record in broken:
        row = rows[alpha_position(record, records)]
        assert row.raw == record.raw
        assert row.reason is not None, f"{kind}: {record.raw!r} accepted"
        assert row.event_time is None


def test_beta_simulator_run_covers_every_kind(
    beta_sim_run: tuple[list[JournalRecord], dict[int, Row]],
) -> None:
    records, rows = beta_sim_run
    assert len(records) == len(rows) == SIM_PINGS
    assert {r.reason for r in records if r.malformed} == set(BETA_MALFORMED_KINDS)


def test_every_valid_beta_simulator_ping_is_accepted(
    beta_sim_run: tuple[list[JournalRecord], dict[int, Row]],
) -> None:
    records, rows = beta_sim_run
    valid = [r for r in records if not r.malformed]
    assert len(valid) == SIM_PINGS - SIM_PINGS // SIM_MALFORMED_EVERY
    for record in valid:
        assert record.ping is not None
        assert rows[record.sequence].raw == record.raw
        assert_same_ping(rows[record.sequence], record.ping)


@pytest.mark.parametrize("kind", BETA_MALFORMED_KINDS)
def test_every_malformed_beta_kind_is_rejected(
    beta_sim_run: tuple[list[JournalRecord], dict[int, Row]], kind: str
) -> None:
    records, rows = beta_sim_run
    broken = [r for r in records if r.reason == kind]
    assert broken
    for record in broken:
        row = rows[record.sequence]
        assert row.raw == record.raw
        assert row.reason is not None, f"{kind}: {record.raw!r} accepted"
        assert row.event_time is None
