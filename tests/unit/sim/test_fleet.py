"""Tests of the fleet model, the ping wire formats, pacing and the journal."""

from __future__ import annotations

import json
import math
import re

import pytest

from streamops.exceptions import SimulatorError
from streamops.sim.fleet import (
    LAT_MAX,
    LAT_MIN,
    LON_MAX,
    LON_MIN,
    Fleet,
    Pacer,
    Ping,
    Timestamps,
    is_valid_vin,
    malformed_kind,
)
from streamops.sim.journal import (
    JournalRecord,
    JournalWriter,
    malformed_records,
    read_journal,
    valid_pings,
)

VIN_RE = re.compile(r"^[0-9A-HJ-NPR-Z]{17}$")
OBD_RE = re.compile(r"^[PCBU][0-9]{4}$")


def take(fleet: Fleet, n: int, at: float = 1_700_000_000.0) -> list[Ping]:
    return [fleet.next_ping(seq, at) for seq in range(1, n + 1)]


def test_same_seed_gives_same_pings_and_other_seed_differs() -> None:
    a = take(Fleet(7, 20, "1A"), 2000)
    b = take(Fleet(7, 20, "1A"), 2000)
    c = take(Fleet(8, 20, "1A"), 2000)
    assert a == b
    assert [p.vin for p in a] != [p.vin for p in c]
    assert [(p.latitude, p.longitude) for p in a] != [(p.latitude, p.longitude) for p in c]


def test_vins_are_valid_unique_round_robin_and_prefixed() -> None:
    fleet = Fleet(3, 200, "1A")
    assert len(set(fleet.vins)) == 200
    assert all(VIN_RE.match(v) and v.startswith("1A") and is_valid_vin(v) for v in fleet.vins)
    pings = take(fleet, 400)
    assert [p.vin for p in pings] == list(fleet.vins) * 2
    other = Fleet(3, 200, "1B")
    assert not set(fleet.vins) & set(other.vins)


def test_positions_speeds_headings_stay_in_range_and_move_plausibly() -> None:
    fleet = Fleet(11, 10, "1A", report_interval=60.0)  # long hops: reaches the box edges
    pings = take(fleet, 50_000)
    for p in pings:
        assert LAT_MIN <= p.latitude <= LAT_MAX and LON_MIN <= p.longitude <= LON_MAX
        assert 0.0 <= p.speed <= 90.0 and 0.0 <= p.heading < 360.0
        assert p.latitude == round(p.latitude, 6) and p.speed == round(p.speed, 1)
    last: dict[str, Ping] = {}
    for p in pings:  # one hop is at most 90 mph for 60 s = 1.5 miles (+ rounding)
        if p.vin in last:
            prev = last[p.vin]
            dlat = (p.latitude - prev.latitude) * 69.0
            dlon = (p.longitude - prev.longitude) * 69.0 * math.cos(math.radians(p.latitude))
            assert math.hypot(dlat, dlon) <= 1.5 + 1e-3
        last[p.vin] = p


def test_obd_codes_are_rare_well_formed_and_at_most_two() -> None:
    pings = take(Fleet(5, 50, "1A"), 20_000)
    with_codes = [p for p in pings if p.obd_codes]
    assert 0 < len(with_codes) < len(pings) * 0.2
    assert all(1 <= len(p.obd_codes) <= 2 for p in with_codes)
    assert all(OBD_RE.match(code) for p in with_codes for code in p.obd_codes)


def test_csv_and_json_round_trip() -> None:
    for ping in take(Fleet(5, 50, "1A"), 5000):
        line = ping.to_csv()
        assert len(line.split(",")) == 8
        assert Ping.from_csv(line) == ping
        assert Ping.from_dict(json.loads(ping.to_json())) == ping
    coded = Ping(1, "1A" + "0" * 15, 1.5, 40.0, -95.0, 10.0, 90.0, ("P0300", "P0420"))
    assert coded.to_csv().endswith(",P0300;P0420")
    assert json.loads(coded.to_json())["obd_codes"] == ["P0300", "P0420"]


@pytest.mark.parametrize(
    "line",
    [
        "1,1A000000000000000,soon,40.0,-95.0,1.0,2.0,",
        "1,1A000000000000000,1.0,40.0,-95.0,1.0,2.0",
        "1,,1.0,40.0,-95.0,1.0,2.0,",
        "1,1A000000000000000,1.0,123.000000,-95.0,1.0,2.0,",
        "1,1A00000000000000I,1.0,40.0,-95.0,1.0,2.0,",
    ],
)
def test_from_csv_rejects_malformed_lines(line: str) -> None:
    with pytest.raises(ValueError):
        Ping.from_csv(line)


def test_malformed_kind_rotates_every_nth_sequence() -> None:
    kinds = ("a", "b", "c")
    got = [malformed_kind(s, 5, kinds) for s in range(1, 31)]
    assert [k for k in got if k] == ["a", "b", "c", "a", "b", "c"]
    assert [s for s, k in zip(range(1, 31), got, strict=True) if k] == [5, 10, 15, 20, 25, 30]
    assert all(malformed_kind(s, 0, kinds) is None for s in range(1, 100))


def test_pacer_grants_rate_times_elapsed_and_stops_at_max() -> None:
    now = [100.0]
    pacer = Pacer(10.0, max_pings=25, monotonic=lambda: now[0])
    assert pacer.due() == 0
    now[0] += 0.5
    assert pacer.due() == 5
    now[0] += 0.25
    assert pacer.due() == 2
    now[0] += 10.0  # a long pause: the backlog beyond one second is forgiven
    assert pacer.due() == 10
    now[0] += 5.0
    assert pacer.due() == 8 and pacer.exhausted
    assert pacer.due() == 0


def test_timestamps_are_millisecond_and_non_decreasing() -> None:
    now = [1_700_000_000.0]
    stamps = Timestamps(lambda: now[0], rate=100.0)
    first = stamps.take(10)
    now[0] += 0.1234
    second = stamps.take(7)
    now[0] -= 5.0  # the clock goes back: times never do
    third = stamps.take(3)
    times = first + second + third
    assert times == sorted(times) and times[-1] <= 1_700_000_000.124
    assert all(t == round(t, 3) for t in times)


def test_fleet_rejects_bad_parameters() -> None:
    with pytest.raises(SimulatorError, match="vehicles"):
        Fleet(1, 0, "1A")
    with pytest.raises(SimulatorError, match="vin_prefix"):
        Fleet(1, 5, "1I")
    with pytest.raises(SimulatorError, match="vin_prefix"):
        Fleet(1, 5, "1" * 15)


def test_journal_round_trip_and_helpers(tmp_path) -> None:
    pings = take(Fleet(1, 3, "1A"), 3)
    records = [
        JournalRecord("alpha", 1, False, None, pings[0].to_csv(), pings[0], "pings-1.csv"),
        JournalRecord("alpha", 2, True, "empty_vin", "2,,x", None, "pings-1.csv"),
        JournalRecord("beta", 3, False, None, pings[2].to_json(), pings[2]),
    ]
    path = tmp_path / "j" / "journal.jsonl"
    writer = JournalWriter(path)
    writer.append(records)
    writer.close()
    with path.open("a", encoding="utf-8") as fh:
        fh.write('{"source": "beta", "seq')  # a crash mid-line
    got = read_journal(path)
    assert got == records
    assert json.loads(path.read_text().splitlines()[2])["file"] is None
    assert valid_pings(got) == [pings[0], pings[2]]
    assert valid_pings(got, "beta") == [pings[2]]
    assert [r.reason for r in malformed_records(got)] == ["empty_vin"]
