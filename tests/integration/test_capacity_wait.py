"""A job whose executor fits no worker waits for cores, and health fails naming the cause.

The issue's defect: after a node loss fleet-pings' application stayed WAITING for a 2-core
executor with 1 core free, and health said only "live but not healthy yet: state STARTING".
Here, on the session's cluster (2 workers of 3 cores), the transactions job asks for one
4-core executor: its driver starts, its application registers and waits. Past the failover
goal (15 s) health fails with the executor it waits for, the cores free per worker and the
way out; the CLI with ``streamops health`` says the same and exits 1.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.fleet import CONFIG
from support.integration import ClusterHandle, wait_until

from streamops.cli import main
from streamops.health import checks as health
from streamops.sim.transactions import TransactionSimulator
from streamops.spec import load_spec
from streamops.world.submit import submit_job

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300),
              pytest.mark.usefixtures("streamops_env")]  # fmt: skip

JOB = "capacity-wait"


@pytest.fixture
def waiting_job(spark_cluster: ClusterHandle, tmp_path: Path) -> Iterator[float]:
    settings = spark_cluster.settings
    url = f"sqlite:///{tmp_path / 'transactions.db'}"
    producer = TransactionSimulator(url, rate=5, seed=4)
    producer.start()
    spec = load_spec(CONFIG / "transactions.yaml")
    wide = spec.resources.model_copy(update={"executor_cores": 4, "max_cores": 4})
    spec = spec.model_copy(update={"name": JOB, "args": {**spec.args, "store_url": url},
                                   "resources": wide})  # fmt: skip
    try:
        submit_job(spec, settings)  # the procedure: no admission (the CLI's would refuse)
        yield time.monotonic()
    finally:
        try:
            spark_cluster.let_go(JOB)
        finally:
            producer.stop()


def _capacity(report: health.HealthReport) -> health.CheckResult | None:
    return next((r for r in report.results if r.name == f"{JOB}/capacity"), None)


def test_a_job_waiting_for_cores_fails_health_naming_the_cause(
    waiting_job: float, spark_cluster: ClusterHandle, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = spark_cluster.settings

    def failed() -> health.CheckResult | None:
        found = _capacity(health.run_checks(settings, jobs=[JOB], groups=["jobs"]))
        return found if found is not None and found.level is health.Level.FAIL else None

    result = wait_until(failed, 90, "health to fail the job waiting for cores", interval=2.0,
                        describe=lambda: str(_capacity(health.run_checks(
                            settings, jobs=[JOB], groups=["jobs"]))))  # fmt: skip
    assert isinstance(result, health.CheckResult)
    print(f"health failed {time.monotonic() - waiting_job:.1f} s after the submission: "
          f"{result.message}")
    text = result.message
    assert text.startswith(f"{JOB} waits for a 4-core executor (1024 MB): 0 of 4 cores granted")
    assert "WAITING for" in text and "longer than the failover goal, 15 s" in text
    assert "free: " in text and "worker-1" in text and "worker-2" in text
    assert "add a worker (`streamops scale --" in text and "or cancel a job" in text

    capsys.readouterr()  # what was printed so far: the CLI's JSON alone follows
    rc = main(["health", "--json", "--no-record", "--job", JOB, "--max-core-wait", "1000"])
    report = json.loads(capsys.readouterr().out)
    [warned] = [r for r in report["results"] if r["name"] == f"{JOB}/capacity"]
    assert warned["level"] == "warn" and "waits for a 4-core executor" in warned["message"]
    rc = main(["health", "--json", "--no-record", "--job", JOB])
    report = json.loads(capsys.readouterr().out)
    assert rc == 1 and f"{JOB} waits for a 4-core executor" in report["summary"]
