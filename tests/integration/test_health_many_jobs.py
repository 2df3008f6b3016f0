"""Health with three kinds of job running at once on the session's cluster: fleet-pings (an
alpha drop directory and a fleetsim-beta), transactions (the journal, counted in entries) and
the trade analyser (the trades producer, a fleetsim-beta server located by ``trades_url``).

The issue's crash: with the journal job running, ``streamops health`` ended in
``KeyError: 'entries'``. Here every way health is read runs while all three jobs run: the CLI
(with and without ``--job``), the ``health_check`` DAG's tasks (``dag.test()``), the
dashboard's jobs and health API and ``/metrics``. Nothing crashes, no check fails on an
exception, and every source of every job has its backlog in its own unit.

Each job runs with one 1-core executor, so the three fit the session cluster's 6 cores with
their drivers; they are cancelled at the end.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families
from support.dag_runs import load_dag, task_states
from support.fleet import CONFIG, FleetRun
from support.integration import ClusterHandle, describe_job, wait_until

from spark_jobs import trade_analyser, transactions
from streamops.cli import main
from streamops.dashboard.app import create_app
from streamops.health import checks as health
from streamops.sim.trades import TradeSimulator
from streamops.sim.transactions import TransactionSimulator
from streamops.spec import JobSpec, load_spec
from streamops.world.submit import submit_job

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600),
              pytest.mark.usefixtures("airflow_db", "streamops_env")]  # fmt: skip

FLEET, TX, TRADES = "many-fleet", "many-tx", "many-trades"
JOBS = (FLEET, TX, TRADES)
CRASH = re.compile(r"\(at \S+\.py:\d+ in \w+")  # how a check that raised names where
UNITS = {FLEET: {"files", "records"}, TX: {"entries"}, TRADES: {"records"}}


def small(spec: JobSpec, name: str, **args: Any) -> JobSpec:
    """``spec`` renamed, with ``args`` and one 1-core executor."""
    resources = spec.resources.model_copy(update={"executor_cores": 1, "max_cores": 1})
    return spec.model_copy(update={"name": name, "args": {**spec.args, **args},
                                   "resources": resources})  # fmt: skip


@pytest.fixture
def three_jobs(spark_cluster: ClusterHandle, tmp_path: Path) -> Iterator[None]:
    settings, registry = spark_cluster.settings, spark_cluster.registry
    tx_url = f"sqlite:///{tmp_path / 'transactions.db'}"
    with ExitStack() as stack:
        fleet = stack.enter_context(FleetRun(spark_cluster, tmp_path / "fleet", job=FLEET,
                                             max_pings=100_000))  # fmt: skip
        producer = TransactionSimulator(tx_url, rate=10, seed=3)
        trades = TradeSimulator(port=0, seed=2, rate=100, max_trades=100_000,
                                data_dir=tmp_path / "tradesim")  # fmt: skip
        for sim in (producer, trades):
            sim.start()
            stack.callback(sim.stop)
        stack.callback(lambda: [registry.cancel(j) for j in JOBS if registry.view(j).is_live])
        started = time.monotonic()
        submit_job(small(fleet.spec(), FLEET), settings)
        submit_job(small(load_spec(CONFIG / "transactions.yaml"), TX, store_url=tx_url),
                   settings)  # fmt: skip
        submit_job(small(load_spec(CONFIG / "trade-analyser-v1.yaml"), TRADES,
                         trades_url=trades.url, store_url=f"sqlite:///{tmp_path / 't.db'}"),
                   settings)  # fmt: skip
        for job in JOBS:
            registry.wait_healthy(job, timeout=240)
        wait_until(lambda: all(_committed_sources(registry.view(j)) for j in JOBS), 120,
                   "every job to commit a position of each source",
                   describe=lambda: "; ".join(describe_job(registry.view(j)) for j in JOBS))
        print(f"three jobs healthy in {time.monotonic() - started:.1f} s")
        yield


def _committed_sources(view: Any) -> bool:
    return bool(view.is_live) and all(info.sources for info in view.stages.values())


def ours(results: list[dict[str, Any]]) -> dict[str, dict[str, str]]:
    """Per job of ours, each of its checks' level by ``group name``."""
    out: dict[str, dict[str, str]] = {job: {} for job in JOBS}
    for r in results:
        job = r["name"].split("/")[0]
        if job in out:
            out[job][f"{r['group']} {r['name']}"] = r["level"]
    return out


def assert_judged_whole(results: list[dict[str, Any]]) -> None:
    crashed = [r["message"] for r in results if CRASH.search(r["message"])]
    assert not crashed, crashed
    for job, levels in ours(results).items():
        groups = {key.split()[0] for key in levels}
        assert groups == {"jobs", "progress", "sources", "sinks"}, (job, levels)
        assert "fail" not in levels.values(), (job, levels)


def test_health_everywhere_while_fleet_transactions_and_trades_run(
    three_jobs: None, spark_cluster: ClusterHandle, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = spark_cluster.settings
    started = time.monotonic()
    asked = [arg for job in JOBS for arg in ("--job", job)]
    rc = main(["health", "--json", "--no-record", "--expected-workers", "2", *asked])
    report = json.loads(capsys.readouterr().out)
    assert_judged_whole(report["results"])
    assert rc == (1 if report["level"] == "fail" else 0)
    sources = {r["name"]: r["message"] for r in report["results"] if r["group"] == "sources"}
    assert "backlog" in sources[f"{TX}/{transactions.SOURCE_ID}"]
    assert "entries" in sources[f"{TX}/{transactions.SOURCE_ID}"]
    assert "records" in sources[f"{TRADES}/{trade_analyser.SOURCE_ID}"]

    main(["health", "--json", "--no-record"])  # every declared job, whatever else runs
    everything = json.loads(capsys.readouterr().out)["results"]
    assert not [r for r in everything if CRASH.search(r["message"])]
    assert {j for j, levels in ours(everything).items() if levels} == set(JOBS)

    run = load_dag("health_check").test(run_conf={"jobs": list(JOBS), "expected_workers": 2})
    states = task_states(run)
    [record] = health.read_history(settings.layout, 1)
    assert record["source"].startswith("airflow:")
    assert_judged_whole(record["results"])
    assert run.state == ("failed" if record["level"] == "fail" else "success"), states

    with TestClient(create_app(settings)) as client:
        jobs = {j["name"]: j for j in client.get("/api/jobs").json()}
        for job in JOBS:
            units = {s["unit"] for st in jobs[job]["stages"] for s in st["sources"]}
            backlogs = [s["backlog"] for st in jobs[job]["stages"] for s in st["sources"]]
            assert units == UNITS[job] and None not in backlogs, jobs[job]
            assert jobs[job]["health"] in ("ok", "warn")  # the DAG's run, recorded
        [newest, *_] = client.get("/api/health").json()
        assert newest["source"] == record["source"]
        metrics = client.get("/metrics").text
    backlog = next(f for f in text_string_to_metric_families(metrics)
                   if f.name == "streamops_source_backlog")  # fmt: skip
    units = {(s.labels["job"], s.labels["unit"]) for s in backlog.samples}
    assert {(TX, "entries"), (TRADES, "records"), (FLEET, "files")} <= units
    print(f"health by the CLI, the DAG, the dashboard and /metrics: "
          f"{time.monotonic() - started:.1f} s")
