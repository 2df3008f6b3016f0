"""A DAG run holds the job's operation lease across its tasks (issue 44, item 1): taken by
its first task, renewed by the next, given up by the DAG's callbacks; a CLI operation in
between (a real ``streamops upgrade`` process) is refused naming the DAG run."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
from support import operators
from support.restart_fake import JOB, FakeCluster, as_dag_task, install, settings_at

from streamops.state import op_lease
from streamops_airflow import job_groups as groups
from streamops_airflow.dag_defaults import manual_dag
from streamops_airflow.procedure_tasks import release_run_leases

RUN = SimpleNamespace(dag_id="restart_job", run_id="manual__1")
CTX = {"job": JOB, "mode": "savepoint", "savepoint": "sp-dag"}


@pytest.fixture
def cluster(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> FakeCluster:
    return as_dag_task(monkeypatch, install(settings_at(tmp_path)), RUN)


def test_a_cli_upgrade_while_a_dag_run_holds_the_job_is_refused_naming_the_run(
    cluster: FakeCluster, tmp_path: Path
) -> None:
    layout = cluster.settings.layout
    assert groups.begin.function(CTX) == "sp-dag"  # the run's first task, then it ended
    held = op_lease.read_operation(layout, JOB)
    assert held is not None and (held.role, held.run, held.step) == (
        "dag", "restart_job/manual__1", "begin")  # fmt: skip
    code, err, _ = operators.run(tmp_path, "cli", "upgrade", JOB,
                                 "config/jobs/fleet-pings-v2.yaml")  # fmt: skip
    assert code == 2, err
    line = err.strip().splitlines()[-1]
    assert line.startswith(f"error: job {JOB} is busy: restart_job (step begin) of DAG run "
                           "restart_job/manual__1, pid "), line  # fmt: skip
    assert not layout.intent_record(JOB, "upgrade").exists()  # the refused upgrade began nothing
    assert groups.request.function(CTX)  # the run's next task takes the lease on
    held = op_lease.read_operation(layout, JOB)
    assert held is not None and held.step == "request_savepoint"
    release_run_leases({"dag_run": RUN})  # the DAG's callback at the end of the run
    assert op_lease.read_operation(layout, JOB) is None


def test_every_manual_dag_gives_its_leases_up_when_it_ends() -> None:
    shared = manual_dag("jobs")
    assert shared["on_success_callback"] is release_run_leases
    assert shared["on_failure_callback"] is release_run_leases


def test_the_last_task_of_a_run_gives_the_lease_up_itself(
    cluster: FakeCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A task with nothing downstream ends the procedure: the lease is free when it returns,
    before Airflow marks the run ended and runs its callbacks (not at all while its database
    is down), so an operator acting on the run's ``success`` is not refused."""
    layout = cluster.settings.layout
    assert groups.begin.function(CTX) == "sp-dag"
    assert op_lease.read_operation(layout, JOB) is not None  # a first task keeps it
    last = SimpleNamespace(dag_id=RUN.dag_id, run_id=RUN.run_id,
                           task=SimpleNamespace(downstream_task_ids=set()))
    monkeypatch.setattr("airflow.sdk.get_current_context", lambda: {"ti": last})
    assert groups.request.function(CTX)
    assert op_lease.read_operation(layout, JOB) is None
