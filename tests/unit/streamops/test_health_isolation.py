"""Health never crashes, whatever runs: every unit a source's backlog counts has thresholds, and
an exception anywhere in a check (or in what it gathered) becomes that check's ``fail``, naming
the exception and the file and line it came from, while every other check still reports."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from streamops.cli import main
from streamops.health import checks as health
from streamops.health.checks import HealthInputs, Level, Thresholds
from streamops.job_view import JobView
from streamops.settings import Settings
from streamops.state.job_status import JobStatus
from streamops.world import source_probes
from streamops.world.source_probes import Prober, SourceProbe, probe_job

JOB = "transactions"
NOW = 1_800_000_000.0
JOURNAL = "journal:transactions"


def view(name: str = JOB, sources: list[dict[str, Any]] | None = None, **status: Any) -> JobView:
    stage = {"batch_id": 1, "last_batch_at": NOW - 5, "sources": sources or []}
    doc = {"state": "RUNNING", "stages": {"log": stage}, **status}
    return JobView(name, "1", "RUNNING", True, "driver-1", "RUNNING", None, 5.0, None, None,
                   JobStatus.parse(doc))  # fmt: skip


def observation(views: list[JobView], **parts: Any) -> HealthInputs:
    settings = Settings.from_env({}, state_root="/nonexistent/state")
    return HealthInputs(settings, Thresholds(expected_workers=0), {"status": "ALIVE"},
                       [v.name for v in views], {v.name: v for v in views}, now=NOW,
                       **parts)  # fmt: skip


@pytest.mark.parametrize(("backlog", "level", "text"), [
    (12, Level.OK, "job transactions: journal:transactions backlog 12 entries"),
    (1_500, Level.WARN, "backlog 1500 entries (warn above 1000)"),
    (5_000, Level.FAIL, "backlog 5000 entries (limit 4500)"),
])  # fmt: skip
def test_a_journal_backlog_is_judged_in_entries(backlog: int, level: Level, text: str) -> None:
    """The issue's crash: ``KeyError: 'entries'`` in ``_probed`` with the journal job running."""
    probe = SourceProbe(JOURNAL, "journal", "entries", backlog=backlog)
    [result] = health.check_sources(observation([view()], sources={JOB: {JOURNAL: probe}}))
    assert result.level is level and text in result.message, result


def test_every_kind_of_source_counts_in_a_unit_that_has_thresholds() -> None:
    units = source_probes.UNITS
    assert set(units) == {"beta", "alpha", "journal"}
    limits = Thresholds().backlog_limits
    for kind, unit in units.items():
        warn, fail = limits[unit]
        assert 0 < warn < fail, (kind, unit)


def test_a_unit_without_thresholds_fails_its_source_alone() -> None:
    odd = SourceProbe("odd:1", "odd", "widgets", backlog=3)
    fine = SourceProbe(JOURNAL, "journal", "entries", backlog=3)
    results = health.check_sources(observation([view()], sources={JOB: {"odd:1": odd,
                                                                         JOURNAL: fine}}))
    by_name = {r.name: r for r in results}
    assert by_name[f"{JOB}/{JOURNAL}"].level is Level.OK
    failed = by_name[f"{JOB}/odd:1"]
    assert failed.level is Level.FAIL
    assert "no backlog thresholds for unit 'widgets'" in failed.message
    assert "streamops/health/sources.py:" in failed.message, failed.message


def test_a_check_that_raises_on_odd_data_fails_that_job_alone() -> None:
    """A reader's malformed record (a loss's time that is not a number) fails its own source;
    the other job's sources are still judged."""
    odd = view(sources_state={JOURNAL: {"losses": [{"at": "yesterday"}]}})
    fine = view("fleet-pings")
    sources = {JOB: {JOURNAL: SourceProbe(JOURNAL, "journal", "entries", backlog=0)},
               "fleet-pings": {"beta:x": SourceProbe("beta:x", "beta", "records", backlog=4)}}
    results = health.check_sources(observation([odd, fine], sources=sources))
    by_name = {r.name: r for r in results}
    assert by_name["fleet-pings/beta:x"].level is Level.OK
    failed = by_name[f"{JOB}/{JOURNAL}"]
    assert failed.level is Level.FAIL and "ValueError" in failed.message
    assert "streamops/health/sources.py:" in failed.message, failed.message


def test_a_probe_that_raises_fails_its_source_and_the_others_are_probed(tmp_path: Path) -> None:
    """An alpha offset the probe cannot read (``ValueError`` deep in the job's own code)."""
    bad = {"source": f"alpha:{tmp_path}", "file": "pings-000001.csv", "read": [["x", "y"]]}
    good = {"source": f"alpha:{tmp_path}/other", "file": "pings-000001.csv"}
    (tmp_path / "other").mkdir()
    job = view(sources=[{"end_offset": bad}, {"end_offset": good}])
    probes = probe_job(Prober(1.0), job, {})
    assert probes[good["source"]].backlog == 0
    crashed = probes[bad["source"]]
    assert crashed.error is not None and "ValueError: not a run of fleet_alpha" in crashed.error
    assert "streamops_contract/sources/alpha_memory.py:" in crashed.error
    results = {r.name: r for r in health.check_sources(observation([job], sources={JOB: probes}))}
    assert results[f"{JOB}/{bad['source']}"].level is Level.FAIL
    assert results[f"{JOB}/{good['source']}"].level is Level.OK


def boom(obs: HealthInputs) -> list[health.CheckResult]:
    raise RuntimeError("the check itself is broken")


@pytest.fixture
def no_cluster(tmp_path: Path, free_port: Callable[[], int],
               monkeypatch: pytest.MonkeyPatch) -> Settings:  # fmt: skip
    """Settings of a state root whose master does not answer (nothing listens on its ports)."""
    env = {"STREAMOPS_STATE_ROOT": str(tmp_path / "state"),
           "STREAMOPS_MASTER_WEBUI_PORT": str(free_port()),
           "STREAMOPS_REST_PORT": str(free_port())}  # fmt: skip
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setitem(health.CHECKS, "progress", boom)
    return Settings.from_env()


def test_a_check_that_raises_fails_alone_and_the_report_still_comes(no_cluster: Settings) -> None:
    report = health.run_checks(no_cluster, Thresholds(expected_workers=1))
    assert [r.group for r in report.results] == ["cluster", "jobs", "progress", "sources",
                                                 "sinks"]  # fmt: skip
    crashed = next(r for r in report.results if r.group == "progress")
    assert crashed.level is Level.FAIL and crashed.name == "progress"
    assert "RuntimeError: the check itself is broken" in crashed.message
    assert "test_health_isolation.py:" in crashed.message and " in boom" in crashed.message
    assert next(r for r in report.results if r.group == "jobs").message == "no declared job"


def test_the_cli_prints_the_whole_report_with_the_crash_and_exits_1(
    no_cluster: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["health", "--json", "--no-record"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert {r["group"] for r in report["results"]} == set(health.GROUPS)
    crashed = next(r for r in report["results"] if r["group"] == "progress")
    assert crashed["level"] == "fail" and "RuntimeError" in crashed["message"]
