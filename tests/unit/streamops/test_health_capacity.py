"""Health of capacity, judged on a real master's ``/json/`` (captured: fleet-pings WAITING for
a 2-core executor, 1 core free on worker-2): a job waiting for cores longer than the failover
goal fails naming the cause and the way out; a shorter wait warns with the same detail; N+1
is reported for the cluster; an odd record fails the capacity check alone."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from streamops.cluster.capacity import FAILOVER_GOAL, Need
from streamops.cluster.status import WorkerStatus
from streamops.health import checks as health
from streamops.health.checks import HealthInputs, Level, Thresholds
from streamops.health.report import WorkersSeen
from streamops.job_view import JobView
from streamops.settings import Settings
from streamops.state.job_status import JobStatus

SETTINGS = Settings.from_env({}, state_root=str(Path("/nonexistent/state")))
RECORDED = Path(__file__).parents[1] / "cluster" / "data" / "master_waiting.json"
W1, W2 = "worker-20261129031749-127.0.0.1-42197", "worker-20261129031749-127.0.0.1-38361"
STARTED = 1795922303.129  # fleet-pings' application registered


def master() -> dict[str, Any]:
    return json.loads(RECORDED.read_text())  # type: ignore[no-any-return]


def worker(name: str, wid: str, state: str = "ALIVE") -> WorkerStatus:
    return WorkerStatus(name, wid, state, 2, 0, 2048, 0, 1, None)


def starting(job: str) -> JobView:
    return JobView(job, "1", "STARTING", True, "driver-1", "RUNNING", "worker-2", None, None,
                   None, JobStatus.parse({"state": "STARTING", "stages": {}}))  # fmt: skip


def obs(waited: float, doc: dict[str, Any] | None = None, **parts: Any) -> HealthInputs:
    seen = WorkersSeen(3, (worker("worker-2", W2), worker("worker-3", W1),
                           worker("worker-1", None, "STARTING")))  # fmt: skip
    needs = {"fleet-pings": Need("fleet-pings", 1, 1024, 2, 512, 2),
             "transactions": Need("transactions", 1, 512, 1, 512, 3)}
    return HealthInputs(SETTINGS, Thresholds(), doc or master(), ["fleet-pings", "transactions"],
                       {"fleet-pings": starting("fleet-pings")}, now=STARTED + waited,
                       workers=seen, needs=needs, **parts)  # fmt: skip


def capacity(results: list[health.CheckResult]) -> list[health.CheckResult]:
    return [r for r in results if r.name.endswith("capacity")]


def test_the_failover_goal_is_the_default_wait() -> None:
    assert Thresholds().max_core_wait == FAILOVER_GOAL == 15.0


def test_a_job_waiting_longer_than_the_goal_fails_naming_cause_and_way_out() -> None:
    [result] = capacity(health.check_jobs(obs(waited=40)))
    assert (result.group, result.name, result.level) == ("jobs", "fleet-pings/capacity",
                                                         Level.FAIL)  # fmt: skip
    text = result.message
    assert text.startswith("fleet-pings waits for a 2-core executor (512 MB): 0 of 2 cores "
                           "granted, application app-20261129031823-0001 WAITING for 40 s")
    assert "1 core (1536 MB) on worker-2" in text and "0 cores (1024 MB) on worker-3" in text
    assert "add a worker (`streamops scale --add worker-1`) or cancel a job" in text
    assert "longer than the failover goal, 15 s" in text
    report = health.judge(obs(waited=40), ["jobs"])
    assert not report.ok and "fleet-pings waits for a 2-core executor" in report.summary()


def test_a_shorter_wait_warns_with_the_same_detail() -> None:
    [result] = capacity(health.check_jobs(obs(waited=5)))
    assert result.level is Level.WARN
    assert "waits for a 2-core executor" in result.message and "worker-2" in result.message


def test_without_a_dead_worker_of_ours_the_way_out_is_one_worker_more() -> None:
    o = obs(waited=40)
    o.workers = WorkersSeen(2, (worker("worker-2", W2), worker("worker-3", W1)))
    [result] = capacity(health.check_jobs(o))
    assert "`streamops scale --workers 3`" in result.message


def test_the_cluster_reports_free_cores_and_n_plus_one() -> None:
    results = capacity(health.check_cluster(obs(waited=40)))
    [result] = results
    assert result.level is Level.WARN and result.group == "cluster"
    assert "no spare capacity (N+1): after the loss of its largest worker" in result.message
    assert "the jobs need 7 cores (fleet-pings 3, transactions 4)" in result.message


def test_an_odd_master_document_fails_the_capacity_check_alone() -> None:
    doc = master()
    doc["activeapps"][1]["cores"] = "many"
    report = health.judge(obs(waited=40, doc=doc), ["cluster", "jobs"])
    [failed] = capacity(report.failures())
    assert failed.message.startswith("the check of the jobs' cores failed: ValueError")
    assert any(r.name == "fleet-pings" for r in report.results)  # the job's own check came
