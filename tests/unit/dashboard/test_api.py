"""The dashboard's API and ``/metrics`` against a real SQLite fleet store and real job files
(status.json, submissions, lease, savepoint manifests, health history); a real fleetsim-beta
answers the backlog probe. No Spark master: the jobs are read from the state root."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import Column, MetaData, Table, create_engine
from support.beta_server import beta_serving, stream_of
from support.dashboard_state import (
    JOB,
    fill_store,
    health_run,
    running_job,
    savepoint,
    stage_status,
    vehicle_rows,
    vin,
    write_alpha,
)

from streamops.dashboard.app import create_app
from streamops.health.report import Level
from streamops.settings import Settings
from streamops_contract.sinks import store

VEHICLES = 25
BETA_EMITTED, BETA_COMMITTED = 120, 100
ALPHA_FILES, ALPHA_COMMITTED = 7, "pings-000002.csv"


@dataclass
class Stack:
    client: TestClient
    status: dict[str, Any]
    settings: Settings
    beta_source: str
    alpha_source: str


@pytest.fixture
def stack(tmp_path: Path, free_port: Callable[[], int]) -> Iterator[Stack]:
    settings = Settings.from_env({}, state_root=str(tmp_path / "state"),
                                 master_webui_port=free_port())  # no master answers  # fmt: skip
    settings.state_root.mkdir(parents=True)
    url = settings.layout.default_store_url
    fill_store(url, vehicle_rows(VEHICLES))
    alpha = tmp_path / "alpha"
    write_alpha(alpha, ALPHA_FILES)
    with beta_serving(pings=BETA_EMITTED, history=1000) as beta:
        beta_source, alpha_source = f"beta:{beta.url}", f"alpha:{alpha}"
        beta_offset = {"source": beta_source, "sequence": BETA_COMMITTED,
                       "stream": stream_of(beta)}  # fmt: skip
        alpha_offset = {"source": alpha_source, "file": ALPHA_COMMITTED}
        stages = {
            "vehicles": stage_status(batch_id=41, age=3.0, rate_in=40.5, rate_out=180.0, late=0,
                                     state_rows=0, offsets=[alpha_offset, beta_offset]),
            "stats": stage_status(batch_id=40, age=40.0, rate_in=20.0, rate_out=90.0, late=12,
                                  state_rows=300, offsets=[beta_offset], failed=2),
        }  # fmt: skip
        degraded = {beta_source: {"state": "degraded", "since": time.time() - 30,
                                  "reason": "HTTP 503"}}  # fmt: skip
        status = running_job(settings, stages=stages, args={"store_url": url},
                             sources_state=degraded)  # fmt: skip
        savepoint(settings, "sp-old", age=7200, stages=["stats", "vehicles"])
        savepoint(settings, "sp-new", age=600, stages=["vehicles"])
        health_run(settings, Level.OK, f"job {JOB} v2 RUNNING")
        health_run(settings, Level.FAIL, f"job {JOB}: stage stats committed no batch for 312 s")
        with TestClient(create_app(settings)) as client:
            yield Stack(client, status, settings, beta_source, alpha_source)
    store._engines.pop(url).dispose()


def test_the_map_gets_every_vehicle_of_the_store(stack: Stack) -> None:
    body = stack.client.get("/api/vehicles").json()
    assert body["count"] == VEHICLES and body["has_obd"] is True
    assert body["columns"][:3] == ["vin", "latitude", "longitude"]
    expected = {r["vin"]: (round(r["latitude"], 5), round(r["longitude"], 5))
                for r in vehicle_rows(VEHICLES)}  # fmt: skip
    assert {r[0]: (r[1], r[2]) for r in body["rows"]} == expected


def test_a_clicked_vehicle_shows_its_latest_ping_and_obd_codes(stack: Stack) -> None:
    moved = vehicle_rows(VEHICLES, shift=0.5, sequence=1000)
    fill_store(stack.settings.layout.default_store_url, moved)
    row = stack.client.get(f"/api/vehicles/{vin(3)}").json()
    assert row["obd_codes"] == ["P0301", "P0420"] and row["sequence"] == 1003
    assert row["longitude"] == moved[3]["longitude"] and row["job_version"] == "2"
    assert stack.client.get(f"/api/vehicles/{vin(1)}").json()["obd_codes"] is None
    assert stack.client.get("/api/vehicles/NOSUCHVIN").status_code == 404


def test_a_v1_store_has_no_obd_codes(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'v1.db'}"
    engine = create_engine(url)
    v1 = Table("vehicles", MetaData(),
               *(Column(c.name, c.type, primary_key=c.primary_key)
                 for c in store.vehicles.columns if c.name != "obd_codes"))  # fmt: skip
    v1.create(engine)
    with engine.begin() as conn:
        row = {k: v for k, v in vehicle_rows(1)[0].items() if k != "obd_codes"}
        conn.execute(v1.insert().values(**row, job_version="1", updated_at=time.time()))
    settings = Settings.from_env({}, state_root=str(tmp_path))
    client = TestClient(create_app(settings, url))
    assert client.get("/api/vehicles").json()["has_obd"] is False
    assert "obd_codes" not in client.get(f"/api/vehicles/{vin(0)}").json()


def test_jobs_panel_without_a_master(stack: Stack) -> None:
    [job] = stack.client.get("/api/jobs").json()
    assert (job["name"], job["version"], job["state"]) == (JOB, "2", "RUNNING")
    assert job["is_live"] and job["healthy"] and not job["failed"]
    assert job["driver_id"] == stack.status["driver_id"]
    assert job["input_rows_per_second"] == 60.5 and job["processed_rows_per_second"] == 270.0
    assert job["last_batch_age"] == pytest.approx(3.0, abs=2)
    assert job["health"] == "fail"  # the last recorded run
    stages = {s["name"]: s for s in job["stages"]}
    backlogs = {s["source"]: (s["backlog"], s["unit"], s["state"])
                for s in stages["vehicles"]["sources"]}  # fmt: skip
    assert backlogs == {
        stack.alpha_source: (ALPHA_FILES - 2, "files", "ok"),
        stack.beta_source: (BETA_EMITTED - BETA_COMMITTED, "records", "degraded"),
    }
    assert stages["stats"]["savepoint_age"] == pytest.approx(7200, abs=5)
    assert stages["vehicles"]["savepoint_age"] == pytest.approx(600, abs=5)


def test_savepoints_and_health_history(stack: Stack) -> None:
    assert [s["name"] for s in stack.client.get("/api/savepoints").json()] == ["sp-new", "sp-old"]
    runs = stack.client.get("/api/health").json()
    assert [r["level"] for r in runs] == ["fail", "ok"]  # newest first
    assert "committed no batch for 312 s" in runs[0]["summary"]


def samples(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def test_metrics_carry_the_status_files_figures(stack: Stack) -> None:
    response = stack.client.get("/metrics")
    assert response.headers["content-type"].startswith("text/plain")
    got = samples(response.text)

    def value(name: str, **labels: str) -> float:
        return got[(f"streamops_{name}", frozenset(labels.items()))]

    now = time.time()
    for stage, info in stack.status["stages"].items():
        where = {"job": JOB, "stage": stage}
        assert value("batch_age_seconds", **where) == pytest.approx(
            now - info["last_batch_at"], abs=2)
        assert value("input_rows_per_second", **where) == info["input_rows_per_second"]
        assert value("processed_rows_per_second", **where) == info["processed_rows_per_second"]
        assert value("late_rows", **where) == info["late_rows"]
        assert value("state_rows", **where) == info["state_rows"]
        assert value("failed_batches", **where) == info["failed_batches"]
        assert value("source_degraded", **where, source=stack.beta_source) == 1
        assert value("source_backlog", **where, source=stack.beta_source, unit="records") == 20
    assert value("source_backlog", job=JOB, stage="vehicles", source=stack.alpha_source,
                 unit="files") == ALPHA_FILES - 2  # fmt: skip
    assert value("savepoint_age_seconds", job=JOB, stage="stats") == pytest.approx(7200, abs=5)
    assert value("job_healthy", job=JOB) == 1 and value("job_failed", job=JOB) == 0


def test_every_answer_forbids_other_origins(stack: Stack) -> None:
    page = stack.client.get("/")
    assert "default-src 'self'" in page.headers["content-security-policy"]
    assert '<canvas id="map"' in page.text
    assert stack.client.get("/static/app.js").status_code == 200


def test_an_empty_state_root_shows_nothing_and_creates_nothing(
    tmp_path: Path, free_port: Callable[[], int]
) -> None:
    settings = Settings.from_env({}, state_root=str(tmp_path / "never-used"),
                                 master_webui_port=free_port())  # fmt: skip
    client = TestClient(create_app(settings))
    assert client.get("/api/vehicles").json()["count"] == 0
    assert client.get("/api/jobs").json() == [] and client.get("/api/savepoints").json() == []
    assert client.get("/api/health").json() == []
    assert "streamops_job_live" in client.get("/metrics").text
    assert client.get("/api/series").json()["symbols"] == []
    assert not (tmp_path / "never-used").exists()


def series_rows(series: str, symbol: str, ends: range, value: Callable[[int], float]) -> list[
    dict[str, Any]
]:
    return [{"series": series, "symbol": symbol, "window_end_ms": end * 1000,
             "window_start_ms": end * 1000 - 1000, "value": value(end), "trades": 10}
            for end in ends]  # fmt: skip


def test_trade_charts_show_the_newest_five_minutes_of_a_symbols_series(stack: Stack) -> None:
    assert stack.client.get("/api/series").json()["symbols"] == []  # the fleet store has none
    url = f"sqlite:///{stack.settings.state_root / 'trades.db'}"
    t0 = 1_790_000_000
    rows = []
    for symbol, base in (("MSFT", 400.0), ("AAPL", 200.0)):
        rows += series_rows("avg-1s", symbol, range(t0, t0 + 360), lambda e, b=base: b + e % 7)
        # v2 began at t0 + 240: its series start there
        rows += series_rows("avg-1m", symbol, range(t0 + 240, t0 + 360), lambda e, b=base: b)
        rows += series_rows("vol-1s", symbol, range(t0 + 240, t0 + 360), lambda e: float(e % 50))
    store.upsert_series(store.engine_for(url), rows)
    running_job(stack.settings, stages={}, args={"store_url": url}, job="trade-analyser")
    dead = "postgresql+psycopg2://nobody@127.0.0.1:1/nothing"  # a store that does not answer
    running_job(stack.settings, stages={}, args={"store_url": dead}, job="trade-old")
    try:
        chart = stack.client.get("/api/series").json()
        assert chart["job"] == "trade-analyser"  # charted although another store is away
        assert list(chart["unreachable"]) == ["trade-old"]
        assert chart["symbols"] == ["AAPL", "MSFT"] and chart["symbol"] == "AAPL"
        one_s = chart["series"]["avg-1s"]
        assert [p[0] for p in one_s] == [e * 1000 for e in range(t0 + 60, t0 + 360)]
        assert all(v == 200.0 + (t // 1000) % 7 for t, v in one_s)
        assert len(chart["series"]["avg-1m"]) == len(chart["series"]["vol-1s"]) == 120
        msft = stack.client.get("/api/series", params={"symbol": "MSFT"}).json()
        assert msft["symbol"] == "MSFT"
        assert msft["series"]["avg-1m"][0] == [(t0 + 240) * 1000, 400.0]
        unknown = stack.client.get("/api/series", params={"symbol": "NOPE"}).json()
        assert unknown["symbol"] == "AAPL"
    finally:
        store._engines.pop(url).dispose()


def test_resources_lists_deployments_requests_and_notifications(stack: Stack) -> None:
    from streamops.state.declarative.resources import Deployment, SavepointRequest
    from streamops.state.declarative.status import set_condition
    from streamops.state.declarative.store import Store
    from streamops.state.layout import append_jsonl

    store = Store(stack.settings.layout)
    spec = {"name": "tx", "version": "2", "entrypoint": "spark_jobs.transactions_v2"}
    store.apply(Deployment.model_validate({"name": "tx", "spec": spec}))
    status = store.deployment_status("tx")
    status.phase, status.driver = "Running", "driver-1"
    status.conditions = set_condition(status.conditions, "UpgradeBlocked", True, "PlanRefused",
                                      "verdict: REFUSED")  # fmt: skip
    store.save_status("JobDeployment", "tx", status)
    store.apply(SavepointRequest(name="tx-sp", job="tx", cancel=True))
    append_jsonl(store.root / "notifications.jsonl", {"at": 1.0, "message": "reconcile pass "
                 "failed", "error": "JobDeployment/tx: upgrade: refused"})  # fmt: skip
    got = stack.client.get("/api/resources").json()
    (dep,) = got["deployments"]
    assert (dep["name"], dep["version"], dep["status"]["phase"]) == ("tx", "2", "Running")
    assert dep["status"]["conditions"][0]["reason"] == "PlanRefused"
    assert got["savepoint_requests"][0]["status"]["state"] == "Pending"
    assert got["notifications"][0]["error"] == "JobDeployment/tx: upgrade: refused"
