"""One observation of the world (:mod:`streamops.world.snapshot`): the master asked once, the
state root's view when it does not answer (the error named), and every observer of the cluster
(health, the reconcile, the dashboard, ``streamops jobs``, ``streamops get``) reading one
snapshot per pass; the declarative deployments read from the state root, the master up or
down.

The master is the edge: ``MasterClient.state`` is replaced by a counting fake; the state root
is real, in a temporary directory.
"""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path
from typing import Any

import pytest
from support.master_doc import running_drivers_doc as master_doc

from streamops.cli import main
from streamops.cluster.capacity import Node
from streamops.cluster.client import MasterClient
from streamops.dashboard.data import gather_jobs
from streamops.declarative.observe import observe
from streamops.exceptions import ClusterNotRunning
from streamops.health.gather import gather
from streamops.health.report import Thresholds
from streamops.settings import Settings
from streamops.state import op_lease
from streamops.state.declarative.resources import DEPLOYMENT, Deployment
from streamops.state.declarative.store import Store
from streamops.state.intents import KINDS
from streamops.state.layout import append_jsonl, write_json_atomic
from streamops.world.snapshot import Snapshot, take
from streamops_contract.state import lease

JOB = "fleet-pings"
DOWN = "the Spark master web UI at http://127.0.0.1:8080 does not answer"




class Master:
    """``MasterClient.state`` of every client made in a test: ``doc``, or down (``None``)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.doc: dict[str, Any] | None = master_doc()
        self.calls = 0
        monkeypatch.setattr(MasterClient, "state", lambda _client: self.answer())

    def answer(self) -> dict[str, Any]:
        self.calls += 1
        if self.doc is None:
            raise ClusterNotRunning(DOWN)
        return self.doc


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    settings = Settings.from_env({}, state_root=str(tmp_path / "state"))
    append_jsonl(settings.layout.submissions_file(JOB),
                 {"event": "submitted", "driver_id": "driver-1", "version": "1",
                  "at": time.time() - 60})  # fmt: skip
    write_json_atomic(settings.layout.status_file(JOB), {
        "job": JOB, "state": "RUNNING", "driver_id": "driver-1", "version": "1",
        "started_at": time.time() - 50, "stages": {}})  # fmt: skip
    return settings


@pytest.fixture
def master(monkeypatch: pytest.MonkeyPatch) -> Master:
    return Master(monkeypatch)


def test_the_master_up_is_asked_once_for_every_job_and_its_workers(
    settings: Settings, master: Master
) -> None:
    master.doc = master_doc("driver-1")
    snap = take(settings)
    assert master.calls == 1
    assert snap.master_up and snap.master_error == "" and snap.master == master.doc
    view = snap.jobs[JOB]
    assert (view.is_live, view.driver_id, view.state) == (True, "driver-1", "RUNNING")
    assert snap.workers == [Node("127.0.0.1:40123", 4, 4096, 3, 3072)]  # free cores
    assert master.calls == 1  # the workers come from the document already read


def test_the_master_down_shows_the_jobs_as_the_state_root_does_and_names_the_error(
    settings: Settings, master: Master
) -> None:
    master.doc = None
    lease.acquire(settings.layout, JOB, "driver-1")  # its driver runs on, heartbeating
    snap = take(settings)
    assert not snap.master_up and snap.master is None and snap.master_error == DOWN
    view = snap.jobs[JOB]
    assert (view.is_live, view.driver_id, view.state) == (True, "driver-1", "RUNNING")
    assert snap.workers == []


def test_a_job_without_a_fresh_lease_is_not_running_while_the_master_is_down(
    settings: Settings, master: Master
) -> None:
    master.doc = None
    view = take(settings).jobs[JOB]
    assert not view.is_live and view.state == "NOT RUNNING (no lease, last RUNNING)"


def test_a_procedure_in_flight_is_seen_with_the_holder_of_its_jobs_operation_lease(
    settings: Settings, master: Master
) -> None:
    layout = settings.layout
    write_json_atomic(KINDS["deploy"].path(layout, JOB),
                      {"phase": "submit", "at": time.time(), "version": "1", "owner": "cli"})
    held = op_lease.try_acquire(layout, op_lease.holder(JOB, "cli", "r1", "deploy"))
    (seen,) = take(settings).in_flight
    assert (seen.intent.kind.name, seen.intent.job, seen.intent.phase) == ("deploy", JOB,
                                                                            "submit")
    assert seen.holder == held
    write_json_atomic(KINDS["deploy"].path(layout, JOB),
                      {"phase": "submitted", "at": time.time(), "version": "1", "owner": "cli"})
    assert take(settings).in_flight == []  # a finished procedure is in flight no more


def test_one_health_pass_asks_the_master_once(settings: Settings, master: Master) -> None:
    master.doc = master_doc("driver-1")
    inputs = gather(settings, Thresholds(expected_workers=1))
    assert master.calls == 1
    assert inputs.master == master.doc and inputs.views[JOB].driver_id == "driver-1"


def test_one_dashboard_refresh_asks_the_master_once(settings: Settings, master: Master) -> None:
    (figures,) = gather_jobs(settings)
    assert master.calls == 1 and figures.name == JOB


def test_one_reconcile_look_asks_the_master_once_and_judges_nothing_while_it_is_down(
    settings: Settings, master: Master
) -> None:
    master.doc = master_doc("driver-1")
    seen = observe(settings, [JOB], with_savepoints={JOB})
    assert master.calls == 1 and seen.cluster_up and seen.job(JOB).driver == "driver-1"
    master.doc = None
    lease.acquire(settings.layout, JOB, "driver-1")
    down = observe(settings, [JOB])
    assert (down.cluster_up, down.cluster_error, down.jobs) == (False, DOWN, {})


def test_streamops_jobs_asks_the_master_once_and_says_when_it_is_down(
    settings: Settings, master: Master, capsys: pytest.CaptureFixture[str]
) -> None:
    root = str(settings.state_root)
    assert main(["--state-root", root, "jobs", "--json"]) == 0
    assert master.calls == 1
    assert json.loads(capsys.readouterr().out)[0]["name"] == JOB
    master.doc = None
    assert main(["--state-root", root, "jobs", "--json"]) == 0
    out = capsys.readouterr()
    assert json.loads(out.out)[0]["is_live"] is False
    assert DOWN in out.err and "shown from the state root" in out.err


def _deployed(settings: Settings) -> None:
    """Two deployments: the snapshot's job, Running by its status, and one never reconciled."""
    store = Store(settings.layout)
    for name in (JOB, "transactions"):
        spec = {"name": name, "version": "1", "entrypoint": "spark_jobs.transactions"}
        store.apply(Deployment.model_validate({"name": name, "spec": spec}))
    status = store.deployment_status(JOB)
    status.phase, status.driver, status.observed_generation = "Running", "driver-1", 1
    store.save_status(DEPLOYMENT, JOB, status)


def _no_master(settings: Settings) -> Settings:
    """``settings`` with a master web UI port nothing listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return settings.model_copy(update={"master_webui_port": port})


def _listed(snap: Snapshot) -> list[tuple[str, str | None, str]]:
    return [(d.name, d.status.phase if d.status else None, d.error) for d in snap.deployments]


def test_a_snapshot_lists_the_deployments_with_their_status(
    settings: Settings, master: Master
) -> None:
    _deployed(settings)
    master.doc = master_doc("driver-1")
    snap = take(settings)
    assert _listed(snap) == [(JOB, "Running", ""), ("transactions", "Pending", "")]
    assert snap.deployments[0].applied.generation == 1  # type: ignore[union-attr]
    assert snap.savepoint_requests == [] and master.calls == 1  # read from the state root


def test_with_no_master_listening_the_snapshot_and_get_list_the_deployments_all_the_same(
    settings: Settings, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _deployed(settings)
    lease.acquire(settings.layout, JOB, "driver-1")  # its driver runs on, heartbeating
    down = take(_no_master(settings))
    assert not down.master_up and "does not answer" in down.master_error
    assert _listed(down) == [(JOB, "Running", ""), ("transactions", "Pending", "")]
    assert down.jobs[JOB].driver_id == "driver-1"  # its view from the state root

    monkeypatch.setenv("STREAMOPS_MASTER_WEBUI_PORT", str(_no_master(settings).master_webui_port))
    monkeypatch.setenv("COLUMNS", "300")
    root = ["--state-root", str(settings.state_root)]
    assert main([*root, "get", "deployments", "--json"]) == 0
    out = capsys.readouterr()
    rows = {r["name"]: r for r in json.loads(out.out)}
    assert rows[JOB]["status"]["phase"] == "Running" and rows[JOB]["job"]["is_live"] is True
    assert rows["transactions"]["status"]["phase"] == "Pending"
    assert rows["transactions"]["job"] is None  # never submitted: the snapshot shows no job
    assert "shown from the state root" in out.err
    assert main([*root, "get", "deployments"]) == 0
    lines = {line.split()[0]: line for line in capsys.readouterr().out.splitlines() if line}
    assert "Running" in lines[JOB] and "driver-1" in lines[JOB] and "1/1" in lines[JOB]
    assert "Pending" in lines["transactions"] and "0/1" in lines["transactions"]
