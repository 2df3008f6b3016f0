from __future__ import annotations

from pathlib import Path

import pytest

from streamops.settings import Settings
from streamops.submit import PYTHON_RUNNER, Submission
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


def test_a_retried_savepoint_request_resumes_the_recorded_one(tmp_path: Path) -> None:
    from streamops import control
    from streamops.intents import record_intent
    from streamops_airflow.operators import RequestSavepointOperator

    settings = Settings.from_env({}, state_root=str(tmp_path))
    op = RequestSavepointOperator(task_id="request", job="job-a", savepoint="sp-1",
                                  procedure="upgrade")  # fmt: skip
    assert op._previous_request(settings, OWNER) is None
    request = control.send_request(settings.layout, "job-a", "savepoint", name="sp-1", cancel=True)
    record_intent(settings, "job-a", "upgrade", "savepoint-with-cancel", savepoint="sp-1",
                  request=request.id, owner=OWNER)  # fmt: skip
    assert op._previous_request(settings, OWNER) == request.id  # pending: wait, do not resend
    control.write_result(settings.layout, "job-a", request, ok=True, message="saved")
    assert op._previous_request(settings, OWNER) == request.id  # answered: it exists
    assert op._previous_request(settings, "airflow:other/run") is None  # another run
    other = RequestSavepointOperator(task_id="request", job="job-a", savepoint="sp-2",
                                     procedure="upgrade")  # fmt: skip
    assert other._previous_request(settings, OWNER) is None  # another savepoint: a new request


def test_a_failed_savepoint_request_is_sent_again(tmp_path: Path) -> None:
    from streamops import control
    from streamops.intents import record_intent
    from streamops_airflow.operators import RequestSavepointOperator

    settings = Settings.from_env({}, state_root=str(tmp_path))
    request = control.send_request(settings.layout, "job-a", "savepoint", name="sp-1", cancel=True)
    record_intent(settings, "job-a", "restart", "savepoint-with-cancel", savepoint="sp-1",
                  request=request.id, owner=OWNER)  # fmt: skip
    control.write_result(settings.layout, "job-a", request, ok=False, message="timed out")
    op = RequestSavepointOperator(task_id="request", job="job-a", savepoint="sp-1",
                                  procedure="restart")  # fmt: skip
    assert op._previous_request(settings, OWNER) is None


class _LiveJobHook:
    """The edge of the sensor: a cluster whose job ``job-a`` is still live (``live_drivers``
    run under its name: the old driver, or a warm standby of the next version)."""

    def __init__(self, settings: Settings, live_drivers: tuple[str, ...] = ("driver-old",)) -> None:
        self.settings = settings
        self.registry = type("Registry", (), {
            "driver_live": lambda _, d: d in live_drivers,
            "view": lambda _, name: type("View", (), {"is_live": True})(),
        })()  # fmt: skip


@pytest.mark.parametrize("handover", [False, True])
def test_savepoint_sensor_waits_for_the_stop_unless_the_driver_hands_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, handover: bool
) -> None:
    from streamops import control
    from streamops_airflow import sensors

    settings = Settings.from_env({}, state_root=str(tmp_path))
    monkeypatch.setattr(sensors, "SparkStandaloneHook", lambda *_: _LiveJobHook(settings))
    request = control.send_request(settings.layout, "job-a", "savepoint", name="sp-1",
                                   cancel=True, handover=handover)  # fmt: skip
    sensor = sensors.SavepointResultSensor(task_id="wait_result", job="job-a",
                                           request_id=request.id, cancel=True)  # fmt: skip
    assert sensor.poke({}) is False  # not answered yet
    # the driver's answer says whether it hands over (spark_jobs.runtime.control)
    control.write_result(settings.layout, "job-a", request, ok=True, message="stopped",
                         detail={"savepoint": "sp-1", "handover": handover})  # fmt: skip
    done = sensor.poke({})
    if handover:  # the old driver idles, lease given up, until the new version runs
        assert done.is_done and done.xcom_value["savepoint"] == "sp-1"
    else:  # the driver is still live: wait until it stopped
        assert done is False


def test_savepoint_sensor_of_an_upgrade_waits_for_the_old_driver_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A warm standby is live under the job's name: the stop to wait for is the old driver's."""
    from streamops import control
    from streamops_airflow import sensors

    settings = Settings.from_env({}, state_root=str(tmp_path))
    live = ["driver-old", "driver-standby"]
    monkeypatch.setattr(sensors, "SparkStandaloneHook",
                        lambda *_: _LiveJobHook(settings, tuple(live)))  # fmt: skip
    request = control.send_request(settings.layout, "job-a", "savepoint", name="sp-1",
                                   cancel=True, handover=False)  # fmt: skip
    sensor = sensors.SavepointResultSensor(task_id="wait_result", job="job-a",
                                           request_id=request.id, cancel=True,
                                           driver="driver-old")  # fmt: skip
    control.write_result(settings.layout, "job-a", request, ok=True, message="stopped",
                         detail={"savepoint": "sp-1", "handover": False})  # fmt: skip
    assert sensor.poke({}) is False  # the old driver still shuts down
    live.remove("driver-old")
    monkeypatch.setattr(sensors, "SparkStandaloneHook",
                        lambda *_: _LiveJobHook(settings, tuple(live)))  # fmt: skip
    done = sensor.poke({})
    assert done.is_done and done.xcom_value["savepoint"] == "sp-1"  # the standby runs on
