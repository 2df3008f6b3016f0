"""A job's submission, rendered as a REST request body and as spark-submit arguments."""

from __future__ import annotations

import dataclasses
import sys
import zipfile
from pathlib import Path

import pytest

import spark_jobs
from streamops.cluster.launcher_jar import JAR_NAME
from streamops.cluster.submission import (
    DEFAULT_CONF,
    PYTHON_RUNNER,
    Submission,
    build_submission,
    driver_script,
    hot_standby_submission,
)
from streamops.settings import Settings
from streamops.spec import JobSpec, decode_spec, spec_from_dict


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings.from_env(
        {}, state_root=str(tmp_path / "state"), master_host="127.0.0.9", master_port=7177,
        python="/opt/py/bin/python3",
    )  # fmt: skip


@pytest.fixture
def spec() -> JobSpec:
    return spec_from_dict({
        "name": "fleet-pings", "version": "4", "entrypoint": "spark_jobs.fleet_pings",
        "args": {"alpha_dir": "{state_root}/data/alpha"},
        "resources": {"driver_cores": 2, "driver_memory": "2g", "executor_cores": 3,
                      "executor_memory": "3g", "max_cores": 6},
        "conf": {"spark.sql.shuffle.partitions": "8", "spark.executor.instances": "2"},
    })  # fmt: skip


def test_driver_script_is_the_installed_main() -> None:
    path = driver_script()
    assert path == Path(spark_jobs.__file__).parent / "main.py"
    assert path.is_file()


def test_build_submission(spec: JobSpec, settings: Settings) -> None:
    sub = build_submission(spec, settings, extra_args=("--restore", "sp-1"))
    assert (sub.job, sub.version) == ("fleet-pings", "4")
    assert sub.app_resource == settings.layout.lib_dir / JAR_NAME
    with zipfile.ZipFile(sub.app_resource) as jar:
        assert "META-INF/MANIFEST.MF" in jar.namelist()
    main, py_files, flag, token, root_flag, root, *extra = sub.app_args
    assert (main, py_files) == (str(driver_script()), "")
    assert (flag, root_flag, root) == ("--spec-b64", "--state-root", str(settings.state_root))
    assert decode_spec(token) == spec
    assert extra == ["--restore", "sp-1"]


def test_spark_properties(spec: JobSpec, settings: Settings) -> None:
    props = build_submission(spec, settings).spark_properties
    assert props["spark.master"] == "spark://127.0.0.9:7177"
    assert props["spark.app.name"] == "fleet-pings"
    assert props["spark.submit.deployMode"] == "cluster"
    assert props["spark.driver.supervise"] == "true"
    assert (props["spark.driver.cores"], props["spark.driver.memory"]) == ("2", "2g")
    assert (props["spark.executor.cores"], props["spark.executor.memory"]) == ("3", "3g")
    assert props["spark.cores.max"] == "6"
    assert props["spark.pyspark.python"] == props["spark.pyspark.driver.python"]
    assert props["spark.pyspark.python"] == "/opt/py/bin/python3"
    assert "spark.driver.host" not in props  # the driver binds where its worker runs
    assert props["spark.sql.shuffle.partitions"] == "8"  # the spec's conf wins over defaults
    hot = spec.model_copy(update={"standby": "hot"})
    assert build_submission(hot, settings).spark_properties["spark.executor.cores"] == "1"
    assert props["spark.executor.instances"] == "2"
    for key in DEFAULT_CONF.keys() - {"spark.sql.shuffle.partitions"}:
        assert props[key] == DEFAULT_CONF[key]
    assert all(isinstance(v, str) for v in props.values())


def test_default_python_is_this_interpreter(spec: JobSpec, tmp_path: Path) -> None:
    settings = Settings.from_env({}, state_root=str(tmp_path))
    props = build_submission(spec, settings).spark_properties
    assert props["spark.pyspark.python"] == sys.executable


def test_rest_body(spec: JobSpec, settings: Settings) -> None:
    sub = build_submission(spec, settings)
    body = sub.rest_body("4.3.0")
    assert body["action"] == "CreateSubmissionRequest"
    assert body["appResource"] == f"file:{sub.app_resource}"
    assert body["mainClass"] == PYTHON_RUNNER == "org.apache.spark.deploy.PythonRunner"
    assert body["appArgs"] == list(sub.app_args)
    assert body["sparkProperties"] == sub.spark_properties
    assert body["clientSparkVersion"] == "4.3.0"
    assert body["environmentVariables"] == {}


def test_spark_submit_args(spec: JobSpec, settings: Settings) -> None:
    sub = build_submission(spec, settings)
    args = sub.spark_submit_args()
    assert args[:9] == [
        "--master", "spark://127.0.0.9:7177", "--deploy-mode", "cluster",
        "--name", "fleet-pings", "--class", PYTHON_RUNNER, "--supervise",
    ]  # fmt: skip
    rest = args[9:]
    n_conf = len(rest) - 1 - len(sub.app_args)
    confs, tail = rest[:n_conf], rest[n_conf:]
    assert tail == [str(sub.app_resource), *sub.app_args]
    assert confs[0::2] == ["--conf"] * (n_conf // 2)
    pairs = [c.split("=", 1) for c in confs[1::2]]
    keys = [k for k, _ in pairs]
    assert keys == sorted(keys)
    handled = {"spark.master", "spark.app.name", "spark.driver.supervise",
               "spark.submit.deployMode"}  # fmt: skip
    assert dict(pairs) == {k: v for k, v in sub.spark_properties.items() if k not in handled}


def test_spark_submit_args_do_not_consume_the_properties(spec: JobSpec, settings: Settings) -> None:
    sub = build_submission(spec, settings)
    before = dict(sub.spark_properties)
    assert sub.spark_submit_args() == sub.spark_submit_args()
    assert sub.spark_properties == before


def test_unsupervised_submission_has_no_supervise_flag(spec: JobSpec, settings: Settings) -> None:
    sub = build_submission(spec, settings)
    props = {**sub.spark_properties, "spark.driver.supervise": "false"}
    plain = dataclasses.replace(sub, spark_properties=props)
    assert "--supervise" not in plain.spark_submit_args()
    assert "spark.driver.supervise=false" not in " ".join(plain.spark_submit_args())


def test_submission_is_frozen(spec: JobSpec, settings: Settings) -> None:
    sub = build_submission(spec, settings)
    assert isinstance(sub, Submission)
    with pytest.raises(dataclasses.FrozenInstanceError):
        sub.job = "other"  # type: ignore[misc]


def test_a_hot_jobs_drivers_carry_the_settings_and_its_standby_a_spare_executor(
    spec: JobSpec, settings: Settings
) -> None:
    assert "--settings-b64" not in build_submission(spec, settings).app_args
    hot = spec.model_copy(update={"standby": "hot"})
    primary = build_submission(hot, settings)
    args = list(primary.app_args)
    assert Settings.from_b64(args[args.index("--settings-b64") + 1]) == settings
    assert primary.spark_properties["spark.cores.max"] == "6"
    standby = hot_standby_submission(hot, settings, moves=2)
    assert standby.spark_properties["spark.cores.max"] == "7"  # one executor of one core more
    assert standby.app_args[-3:] == ("--hot-standby", "--standby-moves", "2")
    assert decode_spec(standby.app_args[3]) == hot  # the job's spec itself is unchanged
