"""Tests of fleetsim-beta: a real uvicorn server on a free loopback port, real HTTP."""

from __future__ import annotations

import argparse
import json
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from streamops.cli import sim_cmds
from streamops.exceptions import SimulatorError
from streamops.settings import Settings
from streamops.sim.beta import (
    BETA_MALFORMED_KINDS,
    BetaSimulator,
    PingHistory,
    ServerThread,
    create_app,
)
from streamops.sim.fleet import Ping, is_valid_vin
from streamops.sim.journal import read_journal

FIXED_CLOCK = 1_700_000_000.0
EMITTED = 3000
HISTORY = 1000


@pytest.fixture(scope="module")
def journal(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("beta") / "journal.jsonl"


@pytest.fixture(scope="module")
def beta(journal: Path) -> Iterator[BetaSimulator]:
    """A beta on a free port that emitted EMITTED records (every 100th malformed)."""
    sim = BetaSimulator(
        port=0,
        rate=20000,
        max_pings=EMITTED,
        history=HISTORY,
        malformed_every=100,
        journal=journal,
    )
    sim.start()
    assert sim.wait_done(10)
    yield sim
    sim.stop()


def get(sim: BetaSimulator, **params: object) -> requests.Response:
    return requests.get(sim.url, params=params, timeout=5)


def sequences(response: requests.Response) -> list[int]:
    assert response.status_code == 200, response.text
    return [record["sequence"] for record in response.json()]


def test_since_and_limit_select_an_ascending_window(beta: BetaSimulator) -> None:
    assert sequences(get(beta, since=2500, limit=10)) == list(range(2501, 2511))
    assert sequences(get(beta, since=2500)) == list(range(2501, 2701))  # default limit 200
    assert sequences(get(beta, since=2990, limit=50)) == list(range(2991, 3001))
    assert sequences(get(beta, since=2500, limit=0)) == []
    assert sequences(get(beta, since=EMITTED)) == []
    assert sequences(get(beta, since=EMITTED + 1000)) == []


def test_paging_from_the_oldest_record_reads_every_record_once(beta: BetaSimulator) -> None:
    since, seen = EMITTED - HISTORY, []
    while batch := sequences(get(beta, since=since, limit=333)):
        seen.extend(batch)
        since = batch[-1]
    assert seen == list(range(EMITTED - HISTORY + 1, EMITTED + 1))


def test_too_old_since_is_410_with_the_oldest_available(beta: BetaSimulator) -> None:
    oldest = EMITTED - HISTORY + 1
    assert sequences(get(beta, since=oldest - 1, limit=1)) == [oldest]
    for since in (0, oldest - 2):
        response = get(beta, since=since, limit=5)
        assert response.status_code == 410
        body = response.json()
        assert body["error"] == "since_too_old" and body["detail"]
        assert body["requested_since"] == since and body["oldest_available"] == oldest


@pytest.mark.parametrize(
    "params", [{"since": -1}, {"since": "abc"}, {"limit": -1}, {"limit": 10001}, {"limit": "x"}]
)
def test_bad_parameters_are_422(beta: BetaSimulator, params: dict) -> None:
    assert get(beta, **params).status_code == 422


def test_head_and_health(beta: BetaSimulator) -> None:
    head = requests.get(f"{beta.base_url}/head", timeout=5).json()
    assert head == {
        "stream": beta.stream,
        "first": EMITTED - HISTORY + 1,
        "last": EMITTED,
        "capacity": HISTORY,
        "emitted": EMITTED,
    }
    assert requests.get(f"{beta.base_url}/health", timeout=5).json() == {"status": "ok"}
    assert beta.emitted == EMITTED and beta.url.endswith(f":{beta.port}/pings")


def test_served_text_is_the_journal_and_pings_are_valid(beta: BetaSimulator, journal: Path) -> None:
    records = read_journal(journal)
    assert [r.sequence for r in records] == list(range(1, EMITTED + 1))
    served = get(beta, since=EMITTED - 500, limit=500)
    assert served.text == "[" + ",".join(r.raw for r in records[-500:]) + "]"
    for record, obj in zip(records[-500:], served.json(), strict=True):
        assert record.source == "beta" and record.file is None
        if not record.malformed:
            assert record.ping == Ping.from_dict(obj)
            assert is_valid_vin(obj["vin"]) and obj["vin"].startswith("1B")
            assert isinstance(obj["obd_codes"], list)


def test_malformed_records_rotate_and_keep_their_sequence(
    beta: BetaSimulator, journal: Path
) -> None:
    bad = [r for r in read_journal(journal) if r.malformed]
    assert [r.sequence for r in bad] == list(range(100, EMITTED + 1, 100))
    assert [r.reason for r in bad] == [BETA_MALFORMED_KINDS[i % 4] for i in range(len(bad))]
    by_sequence = {o["sequence"]: o for o in get(beta, since=EMITTED - 400, limit=400).json()}
    for record in bad[-4:]:
        assert record.ping is None and json.loads(record.raw) == by_sequence[record.sequence]
        with pytest.raises(ValueError):
            Ping.from_dict(by_sequence[record.sequence])
    kinds = {r.reason: json.loads(r.raw) for r in bad}
    assert kinds["latitude_not_number"]["latitude"] == "north"
    assert "vin" not in kinds["missing_vin"]
    assert kinds["latitude_out_of_range"]["latitude"] == 123.0


def test_same_seed_and_clock_serve_the_same_records() -> None:
    bodies = []
    for _ in range(2):
        sim = BetaSimulator(port=0, seed=5, rate=20000, max_pings=500, clock=lambda: FIXED_CLOCK)
        sim.start()
        try:
            assert sim.wait_done(10)
            bodies.append(get(sim, since=0, limit=500).text)
        finally:
            sim.stop()
    assert bodies[0] == bodies[1] and json.loads(bodies[0])[0]["time"] == FIXED_CLOCK


def test_stop_releases_the_port_and_a_busy_port_is_refused() -> None:
    sim = BetaSimulator(port=0, rate=100)
    sim.start()
    port = sim.port
    with pytest.raises(SimulatorError, match="port"):
        BetaSimulator(port=port).start()
    sim.stop()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))


def test_finish_stops_generating_and_goes_on_serving(tmp_path: Path) -> None:
    sim = BetaSimulator(port=0, rate=2000, journal=tmp_path / "b.jsonl")
    sim.start()
    try:
        while sim.emitted < 100:
            sim.wait_done(0.05)
        sim.finish()
        emitted = sim.emitted
        sim.wait_done(0.3)
        assert sim.emitted == emitted == len(read_journal(tmp_path / "b.jsonl"))
        assert sequences(get(sim, since=emitted - 5, limit=10)) == list(
            range(emitted - 4, emitted + 1)
        )
    finally:
        sim.stop()


def test_app_over_an_empty_and_a_trimmed_history() -> None:
    history = PingHistory(capacity=3)
    server = ServerThread(create_app(history), port=0)
    server.start()
    base = f"http://127.0.0.1:{server.port}"
    try:
        assert requests.get(f"{base}/pings", params={"since": 7}, timeout=5).json() == []
        head = requests.get(f"{base}/head", timeout=5).json()
        assert head == {"stream": history.stream, "first": None, "last": 0, "capacity": 3,
                        "emitted": 0}
        for first in range(1, 20, 2):
            history.extend(first, [json.dumps({"sequence": s}) for s in (first, first + 1)])
        head = requests.get(f"{base}/head", timeout=5).json()
        assert head == {"stream": history.stream, "first": 18, "last": 20, "capacity": 3,
                        "emitted": 20}
        got = requests.get(f"{base}/pings", params={"since": 17}, timeout=5).json()
        assert [o["sequence"] for o in got] == [18, 19, 20]
        assert requests.get(f"{base}/pings", params={"since": 16}, timeout=5).status_code == 410
    finally:
        server.stop()
    with pytest.raises(ValueError):
        history.extend(30, ["{}"])


@pytest.mark.parametrize(
    ("kwargs", "param"),
    [
        ({"port": 70000}, "port"),
        ({"port": -1}, "port"),
        ({"rate": -1.0}, "rate"),
        ({"vehicles": 0}, "vehicles"),
        ({"history": 0}, "history"),
        ({"malformed_every": -2}, "malformed_every"),
        ({"max_pings": -1}, "max_pings"),
    ],
)
def test_bad_parameters_name_the_parameter(kwargs: dict, param: str) -> None:
    with pytest.raises(SimulatorError, match=param):
        BetaSimulator(**kwargs)


def test_cli_sim_beta_serves_until_max_pings(tmp_path: Path) -> None:
    parser = argparse.ArgumentParser()
    sim_cmds.register(parser.add_subparsers(dest="command", required=True))
    journal = tmp_path / "j.jsonl"
    args = parser.parse_args(
        [
            "sim",
            "beta",
            "--port",
            "0",
            "--rate",
            "2000",
            "--max-pings",
            "100",
            "--history",
            "50",
            "--journal",
            str(journal),
            "--seed",
            "3",
            "--vehicles",
            "5",
        ]
    )
    assert args.handler(args, Settings.from_env(environ={}, state_root=tmp_path)) == 0
    records = read_journal(journal)
    assert [r.sequence for r in records] == list(range(1, 101))
    assert len({r.ping.vin for r in records if r.ping}) == 5
