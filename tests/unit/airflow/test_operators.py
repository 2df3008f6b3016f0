from __future__ import annotations

from pathlib import Path

import pytest

from streamops.cluster.submission import PYTHON_RUNNER, Submission
from streamops.settings import Settings
from streamops_airflow.exceptions import ProcedureFailed
from streamops_airflow.operators import StandaloneClusterSubmitHook

OWNER = "airflow:savepoint_and_upgrade/manual__1"


@pytest.fixture
def hook(tmp_path: Path) -> StandaloneClusterSubmitHook:
    settings = Settings.from_env({}, state_root=str(tmp_path), master_port=17077, rest_port=16066)
    submission = Submission(
        "fleet", "1", tmp_path / "launcher.jar", ("main.py", "", "--spec-b64", "abc"),
        {"spark.master": settings.master_url, "spark.app.name": "fleet",
         "spark.driver.supervise": "true", "spark.cores.max": "2"},
    )  # fmt: skip
    return StandaloneClusterSubmitHook(submission, settings, tmp_path / "spark-submit")


def test_command_is_the_submission_with_the_rpc_client(hook: StandaloneClusterSubmitHook,
                                                       tmp_path: Path) -> None:  # fmt: skip
    cmd = hook._build_spark_submit_command("ignored")
    assert cmd[:3] == [str(tmp_path / "spark-submit"), "--conf", "spark.master.rest.enabled=false"]
    assert cmd[3:] == hook._submission.spark_submit_args()
    assert ["--deploy-mode", "cluster"] == cmd[cmd.index("--deploy-mode"):][:2]
    assert "--supervise" in cmd and PYTHON_RUNNER in cmd
    assert cmd[-4:] == ["main.py", "", "--spec-b64", "abc"]


def test_connection_is_the_standalone_master(hook: StandaloneClusterSubmitHook) -> None:
    conn = hook._connection
    assert conn["master"] == "spark://127.0.0.1:17077" and conn["deploy_mode"] == "cluster"
    assert conn["rest_endpoint"] == "http://127.0.0.1:16066"
    # the provider parses the driver id from spark-submit's output only when it "tracks"
    assert hook._should_track_driver_status


def test_driver_tracking_until_the_end_is_refused(hook: StandaloneClusterSubmitHook) -> None:
    with pytest.raises(ProcedureFailed, match="tracked by health"):
        hook._start_driver_status_tracking()
