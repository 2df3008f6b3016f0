"""Health checks judged on hand-built observations: every check is a pure function of an
:class:`HealthInputs` (the master's JSON, job views, workers, probes and stores are plain
values); the gathering is tested on real files (logs, status, submissions, alpha directory,
SQLite store, history) in tmp_path."""

from __future__ import annotations

import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Column, Float, MetaData, String, Table, create_engine

from streamops.exceptions import Unhealthy
from streamops.health import checks as health
from streamops.health import gather as health_gather
from streamops.health.checks import CheckResult, HealthInputs, HealthReport, Level, Thresholds
from streamops.health.report import SinkSeen, WorkersSeen
from streamops.job_reads import spec_args
from streamops.job_view import JobView
from streamops.settings import Settings
from streamops.state.job_status import JobStatus
from streamops.state.layout import append_jsonl, write_json_atomic
from streamops.world.source_probes import Prober, probe_job
from streamops_contract.state import lease

JOB = "fleet-pings"
NOW = 1_800_000_000.0


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings.from_env({}, state_root=str(tmp_path / "state"))


def worker(n: int, state: str = "ALIVE") -> dict[str, Any]:
    return {
        "id": f"worker-2026-127.0.0.1-4{n:04d}",
        "host": "127.0.0.1",
        "port": 40000 + n,
        "webuiaddress": f"http://127.0.0.1:{18000 + n}",
        "state": state,
        "cores": 2,
    }


def view(
    stages: dict[str, dict[str, Any]] | None = None,
    *,
    live: bool = True,
    state: str = "RUNNING",
    **status: Any,
) -> JobView:
    doc = {
        "state": state,
        "driver_id": "driver-1" if live else None,
        "stages": stages if stages is not None else {"vehicles": stage()},
        **status,
    }
    return JobView(
        name=JOB,
        version="1",
        state=state,
        is_live=live,
        driver_id="driver-1" if live else None,
        driver_state="RUNNING" if live else "KILLED",
        worker=None,
        last_batch_age=None,
        input_rows_per_second=None,
        processed_rows_per_second=None,
        status=JobStatus.parse(doc),
    )


def stage(age: float = 3.0, **extra: Any) -> dict[str, Any]:
    return {
        "batch_id": 7,
        "ready": True,
        "last_batch_at": NOW - age,
        "idle_since": None,
        "input_rows_per_second": 40.0,
        "processed_rows_per_second": 200.0,
        **extra,
    }


def obs(
    settings: Settings,
    master: dict[str, Any] | None = None,
    views: list[JobView] = (),
    *,
    log_names: dict[str, str] | None = None,
    **limits: Any,
) -> HealthInputs:
    if master is None:
        master = {"status": "ALIVE", "workers": [worker(1), worker(2)]}
    return HealthInputs(
        settings,
        Thresholds(expected_workers=2, **limits),
        master,
        [v.name for v in views],
        {v.name: v for v in views},
        now=NOW,
        workers=WorkersSeen(2, (), log_names or {}),
    )


def levels(results: list[CheckResult]) -> list[Level]:
    return [r.level for r in results]


def test_cluster_ok_then_a_dead_worker_is_named(settings: Settings) -> None:
    assert levels(health.check_cluster(obs(settings))) == [Level.OK, Level.OK]
    master = {"status": "ALIVE", "workers": [worker(1), worker(2, "DEAD")]}
    names = {"127.0.0.1:40002": "worker-2"}  # what the state root's worker logs say
    results = health.check_cluster(obs(settings, master, log_names=names))
    assert results[1].level is Level.FAIL
    assert results[1].message == "worker worker-2 is DEAD; 1 of 2 expected workers ALIVE"


def test_the_workers_are_named_by_the_addresses_their_logs_give(settings: Settings) -> None:
    logs = settings.layout.logs_dir
    logs.mkdir(parents=True)
    (logs / "worker-2.log").write_text(
        "INFO Worker: Starting Spark worker 127.0.0.1:40002 with 2 cores\n"
    )
    master = {"status": "ALIVE", "workers": [worker(1), worker(2, "DEAD")]}
    seen = health_gather._gather_workers(settings, Thresholds(expected_workers=2), master)
    assert seen.expected == 2 and seen.log_names == {"127.0.0.1:40002": "worker-2"}


def test_a_dead_worker_already_replaced_is_no_problem(settings: Settings) -> None:
    master = {"status": "ALIVE", "workers": [worker(1), worker(2, "DEAD"), worker(3)]}
    assert levels(health.check_cluster(obs(settings, master))) == [Level.OK, Level.OK]


def test_an_unnamed_dead_worker_is_named_by_address(settings: Settings) -> None:
    master = {"status": "ALIVE", "workers": [worker(1), worker(7, "DEAD")]}
    [_, workers] = health.check_cluster(obs(settings, master))
    assert workers.message.startswith("worker 127.0.0.1:40007 is DEAD")


def test_a_silent_master_fails_every_cluster_and_job_check(settings: Settings) -> None:
    o = HealthInputs(settings, Thresholds(), None, [JOB])
    [master] = health.check_cluster(o)
    assert master.level is Level.FAIL and "does not answer" in master.message
    assert health.check_jobs(o)[0].level is Level.FAIL


def test_without_the_master_a_job_that_holds_its_lease_is_seen_committing(
    settings: Settings,
) -> None:
    """The master is down (nothing listens on its port), the driver runs on: the job is judged
    from the state root, and its progress, not "no running job"."""
    layout = settings.layout
    append_jsonl(layout.submissions_file(JOB), {"event": "submitted", "driver_id": "driver-1",
                                                "at": time.time() - 100})  # fmt: skip
    now = time.time()
    write_json_atomic(layout.status_file(JOB), {
        "state": "RUNNING", "version": "1", "driver_id": "driver-1",
        "stages": {"vehicles": {**stage(), "last_batch_at": now - 2, "ready": True}},
    })  # fmt: skip
    lease.acquire(layout, JOB, "driver-1")
    report = health.run_checks(settings, Thresholds(expected_workers=2))
    by_group = {r.group: r for r in report.results}
    assert by_group["cluster"].level is Level.FAIL
    assert "does not answer" in by_group["cluster"].message
    jobs = by_group["jobs"]
    assert jobs.level is Level.WARN
    assert "runs on without the master: driver driver-1 holds its lease" in jobs.message
    progress = [r for r in report.results if r.group == "progress"]
    assert {r.level for r in progress} == {Level.OK}  # judged, not "no running job"
    assert any("stage vehicles" in r.message for r in progress)
    # once the lease goes stale the job is not running
    held = lease.read_lease(layout, JOB)
    assert held is not None
    write_json_atomic(layout.lease_file(JOB), {**asdict(held), "heartbeat_at": now - 600})
    jobs = next(r for r in health.run_checks(settings).results if r.group == "jobs")
    assert jobs.level is Level.FAIL and "no driver holds the job's lease" in jobs.message


def test_a_killed_job_fails_naming_its_state(settings: Settings) -> None:
    [ok] = health.check_jobs(obs(settings, views=[view()]))
    assert ok.level is Level.OK
    [dead] = health.check_jobs(obs(settings, views=[view(live=False, state="KILLED")]))
    assert dead.level is Level.FAIL
    assert dead.message == "job fleet-pings is not running: state KILLED (driver ended KILLED)"


def test_a_failed_job_shows_its_error(settings: Settings) -> None:
    failed = view(state="FAILED", error="ValueError: bad row\n  at line 3")
    [result] = health.check_jobs(obs(settings, views=[failed]))
    assert result.message == "job fleet-pings FAILED: ValueError: bad row"
    gone = view(live=False, state="KILLED", error="py4j: the JVM is gone")
    gone.status.state = "FAILED"
    [result] = health.check_jobs(obs(settings, views=[gone]))
    assert result.message == (
        "job fleet-pings is not running: state KILLED (driver ended KILLED); "
        "its last error: py4j: the JVM is gone"
    )


def test_an_unknown_selected_job_fails(settings: Settings) -> None:
    o = obs(settings)
    o.jobs = ["nope"]
    [result] = health.check_jobs(o)
    assert result.level is Level.FAIL and "nope" in result.message


def test_stage_age_limit_and_idle_stage(settings: Settings) -> None:
    stages = {"vehicles": stage(age=312), "stats": stage(age=500, idle_since=NOW - 400)}
    results = health.check_progress(obs(settings, views=[view(stages)], max_batch_age=120))
    by_name = {r.name: r for r in results}
    assert by_name["fleet-pings/vehicles"].level is Level.FAIL
    assert by_name["fleet-pings/vehicles"].message == (
        "job fleet-pings: stage vehicles committed no batch for 312 s (limit 120 s)"
    )
    assert by_name["fleet-pings/stats"].level is Level.OK


def test_processing_slower_than_input_warns_after_batches_in_a_row(settings: Settings) -> None:
    slow = stage(input_rows_per_second=100.0, processed_rows_per_second=20.0, behind_batches=3)
    results = health.check_progress(obs(settings, views=[view({"vehicles": slow})]))
    rate = next(r for r in results if r.name.endswith("/rate"))
    assert rate.level is Level.WARN and "falling behind" in rate.message
    assert "3 batches in a row" in rate.message


def test_one_batch_slower_than_input_is_not_falling_behind(settings: Settings) -> None:
    """Back to back, a batch's processed rate is below its input rate whenever it took longer
    than the batch before it: noise, seen after every recovery (the chaos campaign's health
    waited 20-60 s on it)."""
    once = stage(input_rows_per_second=400.0, processed_rows_per_second=200.0, behind_batches=2)
    results = health.check_progress(obs(settings, views=[view({"vehicles": once})]))
    rate = next(r for r in results if r.name.endswith("/rate"))
    assert rate.level is Level.OK, rate.message


def with_sources(alpha_file: str, seq: int, alpha_id: str = "fleetsim-alpha") -> JobView:
    """A running job whose stage committed these offsets (source ids as fleet-pings sets)."""
    sources = [
        {"end_offset": {"source": alpha_id, "file": alpha_file}},
        {"end_offset": {"source": "fleetsim-beta", "sequence": seq}},
    ]
    return view({"vehicles": stage(sources=sources)})


def probed(o: HealthInputs) -> HealthInputs:
    """``o`` with its sources probed as :func:`health_gather.gather` probes them."""
    prober = Prober(1.0)
    o.sources = {v.name: probe_job(prober, v, spec_args(o.settings, v.name) or {})
                 for v in o.live_views}  # fmt: skip
    return o


def test_source_backlog_located_by_the_job_args(settings: Settings, tmp_path: Path) -> None:
    alpha = tmp_path / "alpha"
    alpha.mkdir()
    for i in range(1, 8):
        (alpha / f"pings-{i:06d}.csv").write_text("x\n")
    submitted(settings, "", args={"alpha_dir": str(alpha), "beta_url": "http://127.0.0.1:1/pings"})
    results = health.check_sources(
        probed(obs(settings, views=[with_sources("pings-000002.csv", 0)], backlog_warn_files=3))
    )
    by_name = {r.name: r for r in results}
    alpha_result = by_name["fleet-pings/fleetsim-alpha"]
    assert alpha_result.level is Level.WARN
    assert alpha_result.message == "job fleet-pings: fleetsim-alpha backlog 5 files (warn above 3)"
    beta_result = by_name["fleet-pings/fleetsim-beta"]
    assert beta_result.level is Level.WARN  # the job's reader says how long: see below
    assert "http://127.0.0.1:1/head does not answer" in beta_result.message


def test_a_source_id_with_its_location_wins(settings: Settings, tmp_path: Path) -> None:
    (tmp_path / "pings-000009.csv").write_text("x\n")
    job = with_sources("pings-000001.csv", 0, alpha_id=f"alpha:{tmp_path}")
    results = health.check_sources(probed(obs(settings, views=[job])))
    alpha = next(r for r in results if "alpha" in r.name)
    assert alpha.level is Level.OK and "backlog 1 files" in alpha.message
    beta = next(r for r in results if "beta" in r.name)
    assert beta.level is Level.WARN and "no beta_url arg" in beta.message


def make_store(path: Path, updated_at: float | None) -> str:
    url = f"sqlite:///{path}"
    meta = MetaData()
    table = Table(
        "vehicles", meta, Column("vin", String, primary_key=True), Column("updated_at", Float)
    )
    engine = create_engine(url)
    meta.create_all(engine)
    if updated_at is not None:
        with engine.begin() as conn:
            conn.execute(table.insert().values(vin="V1", updated_at=updated_at))
    engine.dispose()
    return url


def submitted(
    settings: Settings, store_url: str, at: float = NOW - 1000, args: dict[str, str] | None = None
) -> None:
    spec = {
        "name": JOB,
        "version": "1",
        "entrypoint": "spark_jobs.fleet_pings",
        "args": args or {"store_url": store_url},
    }
    record = {"event": "submitted", "driver_id": "driver-1", "at": at, "spec": spec}
    append_jsonl(settings.layout.submissions_file(JOB), record)


def test_sink_freshness(settings: Settings, tmp_path: Path) -> None:
    fresh_url = make_store(tmp_path / "fresh.db", NOW - 10)
    assert health.newest_write(fresh_url) == NOW - 10  # what the gathering reads
    submitted(settings, fresh_url)
    assert health_gather._gather_sink(settings, JOB) == SinkSeen(True, fresh_url, NOW - 10)
    o = obs(settings, views=[view()])
    o.sinks = {JOB: SinkSeen(True, fresh_url, NOW - 10)}
    [fresh] = health.check_sinks(o)
    assert fresh.level is Level.OK and "10 s ago" in fresh.message
    o = obs(settings, views=[view()], max_sink_age=300)
    o.sinks = {JOB: SinkSeen(True, "sqlite:///stale.db", NOW - 900)}
    [stale] = health.check_sinks(o)
    assert stale.level is Level.FAIL
    assert "store not written for 900 s while data flows (limit 300 s)" in stale.message


def test_declared_jobs_leave_out_cancelled_and_stopped(settings: Settings) -> None:
    layout = settings.layout
    for name in ("running", "cancelled", "stopped"):
        append_jsonl(layout.submissions_file(name), {"event": "submitted", "at": 100.0})
    append_jsonl(layout.submissions_file("cancelled"), {"event": "cancelled", "at": 200.0})
    write_json_atomic(
        layout.status_file("stopped"),
        {"state": "STOPPED", "stopped_by": "sp-1", "stopped_at": 300.0},
    )
    assert health.declared_jobs(layout) == ["running"]


def test_report_summary_history_and_raise(settings: Settings) -> None:
    bad = CheckResult("cluster", "workers", Level.FAIL, "worker worker-2 is DEAD")
    report = HealthReport(time.time(), (CheckResult("jobs", JOB, Level.OK, "fine"), bad))
    assert report.level is Level.FAIL and report.summary() == "worker worker-2 is DEAD"
    with pytest.raises(Unhealthy, match="1 health check\\(s\\) failed: worker worker-2 is DEAD"):
        report.raise_if_failed()
    health.record(settings.layout, report, source="test")
    health.record(settings.layout, HealthReport(time.time(), ()), source="test")
    history = health.read_history(settings.layout, last=5)
    assert [h["level"] for h in history] == ["fail", "ok"]
    assert HealthReport.from_json(history[0]) == report
    assert settings.layout.health_history.parent.name == "health"


def test_history_is_trimmed_to_its_last_runs(settings: Settings) -> None:
    for i in range(30):
        bad = CheckResult("jobs", JOB, Level.FAIL, f"run {i}")
        health.record(settings.layout, HealthReport(float(i), (bad,)), max_bytes=2000, keep=5)
    history = health.read_history(settings.layout, last=100)
    assert 1 <= len(history) <= 6
    assert history[-1]["summary"] == "run 29"
    assert settings.layout.health_history.stat().st_size <= 2000 + 400
