"""The embedded Airflow of ``streamops up`` (api-server, scheduler, dag-processor, triggerer on
a free port, its metadata on the embedded PostgreSQL under a temporary state root) shows the
project's DAGs and a finished run's history in headless Debian Chromium. Runs triggered back
to back while a fleet job runs on the session's cluster (the machine busy) never get an HTTP
5xx (on SQLite they could: "database is locked"); ``down`` leaves no Airflow or PostgreSQL
process.

A health_check run is triggered through the REST API (with no Spark master on the settings'
ports it ends red, naming the master), the browser logs in with a token from the simple auth
manager (``POST /auth/token``, sent as the ``_token`` cookie the UI uses) and screenshots the
DAG list and the run. Assertions read the page's text and the REST API; the screenshots are
the artefacts (under the test's tmp dir, copied to ``var/screenshots/``). The embedded
PostgreSQL killed under a running Airflow is the chaos campaign's ``airflow-db`` step (in the
middle of an upgrade run; ``streamops airflow start`` starts it and the four processes again).
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from e2e.chromium import Chromium, chromium_path
from support.airflow_api import Api, wait_for
from support.fleet import FleetRun
from support.integration import ClusterHandle

from streamops import processes
from streamops.services import running_service
from streamops.settings import PROJECT_ROOT, Settings
from streamops.stack.airflow_stack import COMPONENTS, AirflowOptions, AirflowStack, service_name

pytestmark = pytest.mark.skipif(chromium_path() is None, reason="needs Debian's chromium")

SCREENSHOTS = PROJECT_ROOT / "var" / "screenshots"


@pytest.fixture
def airflow(tmp_path: Path, free_port: Callable[[], int]) -> Iterator[AirflowStack]:
    settings = Settings.from_env(
        {}, state_root=str(tmp_path / "state"), master_port=free_port(),
        master_webui_port=free_port(), rest_port=free_port(),
    )  # fmt: skip
    stack = AirflowStack(settings, AirflowOptions(port=free_port(), start_timeout=600))
    records: list[processes.PidRecord] = []
    try:
        started = time.monotonic()
        stack.start()
        print(f"Airflow healthy {time.monotonic() - started:.1f} s after `airflow start`")
        records = [r for c in COMPONENTS if (r := running_service(settings, service_name(c)))]
        yield stack
    finally:
        records += [r for c in COMPONENTS if (r := running_service(settings, service_name(c)))]
        stack.stop()
        left = [p for r in records for p in processes.group_members(r.pgid)]
        assert not left, f"Airflow processes left behind: {left}"
        assert stack.database.postgres.pid() is None, "the embedded PostgreSQL still runs"


def test_the_ui_shows_the_dags_and_a_finished_run(
    airflow: AirflowStack, spark_cluster: ClusterHandle, tmp_path: Path,
    free_port: Callable[[], int],
) -> None:  # fmt: skip
    password_file = airflow.password_file
    assert password_file.stat().st_mode & 0o777 == 0o600
    api = Api(airflow)
    wait_for(lambda: api("GET", "/dags/health_check"), 300, "the dag-processor to parse the DAGs")
    api("PATCH", "/dags/health_check", json={"is_paused": False})
    started = time.monotonic()
    run = api("POST", "/dags/health_check/dagRuns", json={"logical_date": None, "conf": {}})
    run_id = run["dag_run_id"]
    path = f"/dags/health_check/dagRuns/{run_id}"
    done = wait_for(lambda: (r := api("GET", path))["state"] in ("success", "failed") and r,
                    600, f"run {run_id} to finish")  # fmt: skip
    print(f"health_check run {run_id} {done['state']} in {time.monotonic() - started:.1f} s")
    assert done["state"] == "failed", "no Spark master runs here: the health check must be red"
    tis = {t["task_id"]: t["state"] for t in api("GET", f"{path}/taskInstances")["task_instances"]}
    assert tis["check_cluster"] == "failed" and tis["report"] == "failed", tis
    # three more runs back to back while a fleet job runs on the session's cluster (the
    # machine busy) and the scheduler and the dag-processor write: the metadata database takes
    # them all and every request is answered (Api fails on any HTTP status >= 400)
    with FleetRun(spark_cluster, tmp_path / "fleet", job="fleet-ui-load", rate=100) as fleet:
        fleet.submit()
        more = [api("POST", "/dags/health_check/dagRuns", json={"logical_date": None, "conf": {}})
                for _ in range(3)]  # fmt: skip
        assert len({r["dag_run_id"] for r in more}) == 3
        for r in more:
            p = f"/dags/health_check/dagRuns/{r['dag_run_id']}"
            wait_for(lambda p=p: api("GET", p)["state"] in ("success", "failed"), 600,
                     f"run {r['dag_run_id']} to finish")  # fmt: skip
        assert spark_cluster.registry.view("fleet-ui-load").is_live
    assert airflow.database.choice == "embedded" and "running" in airflow.database.state()

    url = airflow.options.url
    with Chromium(port=free_port(), profile=tmp_path / "chromium") as browser:
        browser.set_cookie("_token", api.headers["Authorization"].split()[1], url)
        browser.goto(f"{url}/dags")
        text = browser.wait_for_text("health_check")
        assert "Log in" not in text[:200]
        shots = [browser.screenshot(tmp_path / "airflow-dags.png")]
        browser.goto(f"{url}/dags/health_check/runs/{run_id}")
        text = browser.wait_for_text(run_id, "check_cluster")
        assert "failed" in text.lower()
        shots.append(browser.screenshot(tmp_path / "airflow-run.png"))
        browser.goto(f"{url}/dags/health_check")
        browser.wait_for_text("health_check", "check_cluster")
        shots.append(browser.screenshot(tmp_path / "airflow-grid.png"))
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    for shot in shots:
        assert shot.stat().st_size > 10_000, f"{shot} looks empty"
        shutil.copy(shot, SCREENSHOTS / shot.name)
        print(f"screenshot {SCREENSHOTS / shot.name}")

