"""The deploy DAG's operator runs the one deploy (:func:`streamops.procedures.deploy.start_job`,
the CLI's ``submit`` too): its ``spark-submit`` submits the job's driver, and a ``standby:
hot`` spec's hot standby is submitted beside it, as ``streamops submit`` does. The master is a
fake that records the submissions; the registry, the submitter and the submissions file are
real."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import yaml

from streamops.job_reads import read_submissions
from streamops.jobs import JobRegistry
from streamops.settings import PROJECT_ROOT, Settings
from streamops.world.operations import Operations
from streamops.world.port import ControlSavepoints, MasterSubmitter, SystemClock
from streamops_airflow import operators

RUN = SimpleNamespace(dag_id="deploy_job", run_id="manual__1")
V1 = PROJECT_ROOT / "config" / "jobs" / "fleet-pings.yaml"


class Master:
    """A master running nothing yet; the REST submissions it is asked for are recorded."""

    def __init__(self) -> None:
        self.created: list[dict[str, Any]] = []

    def state(self) -> dict[str, Any]:
        return {"activedrivers": [], "completeddrivers": [], "activeapps": [], "workers": []}

    def active_drivers(self) -> list[Any]:
        return []

    def create_submission(self, body: dict[str, Any]) -> str:
        self.created.append(body)
        return f"driver-rest-{len(self.created)}"


@pytest.mark.parametrize("standby", ["hot", None])
def test_the_deploy_dag_submits_the_hot_standby_of_a_hot_spec(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, standby: str | None
) -> None:
    settings = Settings.from_env({}, state_root=str(tmp_path / "state"))
    doc = yaml.safe_load(V1.read_text())
    if standby:
        doc["standby"] = standby
    spec_file = tmp_path / "job.yaml"
    spec_file.write_text(yaml.safe_dump(doc))
    master = Master()
    registry = JobRegistry(settings, master)  # type: ignore[arg-type]
    ops = Operations(settings, registry, ControlSavepoints(registry),
                     MasterSubmitter(settings, registry), SystemClock())  # fmt: skip
    install = SimpleNamespace(version="4.0.0", home=tmp_path)
    monkeypatch.setattr("streamops_airflow.hooks.ops_operations", lambda *_: ops)
    monkeypatch.setattr(operators, "SparkStandaloneHook",
                        lambda *_: SimpleNamespace(settings=settings))  # fmt: skip
    monkeypatch.setattr(operators, "check_spark_install", lambda: install)
    monkeypatch.setattr("streamops.world.submit.check_spark_install", lambda: install)
    monkeypatch.setattr("streamops.cluster.submission.check_spark_install", lambda: install)
    submitted: list[str] = []

    def spark_submit(hook: operators.StandaloneClusterSubmitHook, app: str) -> str:
        submitted.append(" ".join(hook._submission.spark_submit_args()))
        return "driver-1"

    monkeypatch.setattr(operators.StandaloneClusterSubmitHook, "submit", spark_submit)
    op = operators.StreamingSparkSubmitOperator(task_id="submit", spec_path=str(spec_file),
                                                wait_for_healthy=False)  # fmt: skip
    assert op.execute({"ti": RUN}) == "driver-1"  # type: ignore[arg-type]
    assert len(submitted) == 1 and "--hot-standby" not in submitted[0]
    subs = [s for s in read_submissions(settings.layout.submissions_file(doc["name"]))
            if s.get("event") == "submitted"]  # fmt: skip
    hot = [s["driver_id"] for s in subs if s.get("hot_standby")]
    assert [s["driver_id"] for s in subs if not s.get("hot_standby")] == ["driver-1"]
    assert hot == (["driver-rest-1"] if standby else [])
    assert len(master.created) == len(hot)
