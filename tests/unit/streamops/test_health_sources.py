"""The ``sources`` health checks against a real fleetsim-beta on loopback: a reset, replaced or
truncated upstream fails naming both positions; degraded sources warn, then fail; counted
losses and late files show."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.beta_server import beta_serving, stream_of

from streamops.health.checks import HealthInputs, Level, Thresholds, check_sources
from streamops.job_view import JobView
from streamops.settings import Settings
from streamops.sim.beta import BetaSimulator
from streamops.state.job_status import JobStatus
from streamops.world.source_probes import Prober, probe_job

JOB = "fleet-pings"
NOW = 1_800_000_000.0
PINGS, HISTORY = 300, 100


@pytest.fixture(scope="module")
def beta() -> Iterator[BetaSimulator]:
    with beta_serving(PINGS, HISTORY) as sim:
        yield sim


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings.from_env({}, state_root=str(tmp_path / "state"))


def judge(
    settings: Settings, sim: BetaSimulator, offset: dict[str, Any], **status: Any
) -> tuple[Level, str]:
    """The one result for the job's beta source, its offset and status as given."""
    source = f"beta:{sim.url}"
    doc = {
        "state": "RUNNING",
        "stages": {"vehicles": {"sources": [{"end_offset": {"source": source, **offset}}]}},
        **status,
    }
    view = JobView(JOB, "1", "RUNNING", True, "driver-1", "RUNNING", None, 1.0, None, None,
                   JobStatus.parse(doc))  # fmt: skip
    probes = probe_job(Prober(5.0), view, {})  # the gathering's probe of the real server
    obs = HealthInputs(settings, Thresholds(), {}, [JOB], {JOB: view}, now=NOW,
                      sources={JOB: probes})  # fmt: skip
    (result,) = check_sources(obs)
    assert result.name == f"{JOB}/{source}"
    return result.level, result.message


def test_caught_up_is_ok(settings: Settings, beta: BetaSimulator) -> None:
    level, message = judge(settings, beta, {"sequence": PINGS - 3, "stream": stream_of(beta)})
    assert level is Level.OK and message.endswith("backlog 3 records")


def test_a_replaced_stream_fails_naming_both_positions(
    settings: Settings, beta: BetaSimulator
) -> None:
    level, message = judge(settings, beta, {"sequence": 250, "stream": "old"})
    assert level is Level.FAIL
    assert "committed sequence 250 of stream old" in message
    assert f"now serves stream {stream_of(beta)} (sequences {PINGS - HISTORY + 1}..{PINGS})" in (
        message
    )


def test_a_head_below_the_committed_offset_fails(settings: Settings, beta: BetaSimulator) -> None:
    level, message = judge(settings, beta, {"sequence": PINGS + 40, "stream": stream_of(beta)})
    assert level is Level.FAIL
    assert f"committed sequence {PINGS + 40}" in message and f"head is {PINGS}, below" in message


def test_records_gone_before_they_were_read_fail(settings: Settings, beta: BetaSimulator) -> None:
    level, message = judge(settings, beta, {"sequence": 50})
    assert level is Level.FAIL
    assert f"no longer holds sequences 51..{PINGS - HISTORY}" in message


def test_a_degraded_source_warns_then_fails(settings: Settings, beta: BetaSimulator) -> None:
    at = {"sequence": PINGS, "stream": stream_of(beta)}
    source = f"beta:{beta.url}"

    def degraded(since: float) -> dict[str, Any]:
        return {source: {"state": "degraded", "since": since, "reason": "did not answer",
                         "failures": 4}}  # fmt: skip

    level, message = judge(settings, beta, at, sources_state=degraded(NOW - 30))
    assert level is Level.WARN and "degraded since" in message and "(30 s, limit 120 s)" in message
    assert "did not answer; 4 failed tries" in message
    level, message = judge(settings, beta, at, sources_state=degraded(NOW - 500))
    assert level is Level.FAIL and "did not answer" in message


def test_an_accepted_loss_shows(settings: Settings, beta: BetaSimulator) -> None:
    at = {"sequence": PINGS, "stream": stream_of(beta)}
    loss = {"at": NOW - 60, "committed": 120, "resumed_after": 200, "lost_records": 80}
    state = {f"beta:{beta.url}": {"state": "ok", "losses": [loss]}}
    level, message = judge(settings, beta, at, sources_state=state)
    assert level is Level.WARN
    assert "1 accepted loss(s)" in message and "lost_records=80" in message
    old = {**loss, "at": NOW - 7200}
    level, message = judge(
        settings, beta, at, sources_state={f"beta:{beta.url}": {"losses": [old]}}
    )
    assert level is Level.OK and "lost_records=80" in message  # never out of sight
    other = {"at": NOW - 30, "committed": 300, "old_stream": "s", "lost_records": None}
    level, message = judge(
        settings, beta, at, sources_state={f"beta:{beta.url}": {"losses": [old, other]}}
    )
    assert level is Level.WARN and "2 accepted loss(s)" in message
    assert "80 records skipped in all, plus an unknown number in 1 reset(s)" in message


def test_alpha_late_ignored_and_changed_files_show(settings: Settings, tmp_path: Path) -> None:
    """An alpha offset with its memory of the files read: a late file it has not read yet
    counts in the backlog; what its readers reported (a name it does not read, a late file
    too old to read, a read file that changed) is named by health."""
    drop = tmp_path / "alpha"
    drop.mkdir()
    for n in (1, 2, 3):
        (drop / f"pings-00000000000{n}.csv").write_text("x\n")
    os.utime(drop / "pings-000000000001.csv", (NOW - 10, NOW - 10))  # late, not read yet
    (drop / "notes.csv").write_text("x\n")
    source = f"alpha:{drop}"
    offset = {"source": source, "file": "pings-000000000003.csv", "floor": "", "floor_time": 0.0,
              "latest": NOW, "read": [["pings-000000000002.csv", "pings-000000000003.csv"]]}
    events = {
        "ignored_files": [{"at": NOW - 5, "file": "notes.csv",
                           "reason": "name does not match pings-<n>.csv"}],
        "late_files": [{"at": NOW - 5, "file": "pings-000000000000.csv", "read": False,
                        "reason": "older than max_file_age"}],
        "changed_files": [{"at": NOW - 5, "file": "pings-000000000002.csv",
                           "change": "changed after it was read"}],
    }  # fmt: skip
    doc = {"state": "RUNNING", "sources_state": {source: {"state": "ok", **events}},
           "stages": {"vehicles": {"sources": [{"end_offset": offset}]}}}  # fmt: skip
    view = JobView(JOB, "1", "RUNNING", True, "driver-1", "RUNNING", None, 1.0, None, None,
                   JobStatus.parse(doc))  # fmt: skip
    obs = HealthInputs(settings, Thresholds(), {}, [JOB], {JOB: view}, now=NOW,
                      sources={JOB: probe_job(Prober(5.0), view, {})})  # fmt: skip
    (result,) = check_sources(obs)
    assert result.level is Level.WARN
    assert "backlog 1 files" in result.message  # pings-1, late: the next batch reads it
    assert "1 ignored file(s)" in result.message and "file=notes.csv" in result.message
    assert "1 late file(s)" in result.message and "file=pings-000000000000.csv" in result.message
    assert "1 changed file(s)" in result.message and "file=pings-000000000002.csv" in (
        result.message)


def test_the_trades_producer_is_probed_by_the_trade_analysers_trades_url(
    beta: BetaSimulator,
) -> None:
    """The trade analyser's source (id ``tradesim``) is a fleetsim-beta server located by the
    job's ``trades_url``: its backlog in records, not an upstream that cannot be located."""
    offset = {"source": "tradesim", "sequence": PINGS - 7, "stream": stream_of(beta)}
    probe = Prober(5.0).probe("tradesim", offset, {"trades_url": beta.url})
    assert probe is not None and probe.unknown is None, probe
    assert (probe.kind, probe.unit, probe.backlog) == ("beta", "records", 7)
