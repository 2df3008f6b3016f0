"""The job registry: a job's view through it (status file + submissions + the master's JSON,
built by :mod:`streamops.job_reads`), and its commands (cancel, orphans cleared).

The master is the edge: a hand-written fake client answers ``state()`` with dicts shaped
like Spark's ``/json/``; the status and submissions files are real, in a temporary root.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, cast

import pytest

from streamops.cluster.client import DriverInfo, MasterClient
from streamops.exceptions import JobAlreadyRunning, UnsafeNameError
from streamops.job_reads import read_submissions
from streamops.job_view import JobView
from streamops.jobs import JobRegistry
from streamops.settings import Settings
from streamops.state.layout import append_jsonl, write_json_atomic
from streamops.world.submit import ensure_not_running
from streamops_contract.state import lease

JOB = "fleet-pings"
WORKER = "worker-20260101000000-127.0.0.1-40123"


class FakeMaster:
    """Answers ``state()`` like ``GET :8080/json/`` of a standalone master."""

    def __init__(self, state: dict[str, Any] | None = None) -> None:
        self.answer: dict[str, Any] = state or master()
        self.calls = 0

    def state(self) -> dict[str, Any]:
        self.calls += 1
        return self.answer


def driver(driver_id: str, state: str = "RUNNING", worker: str = WORKER) -> dict[str, Any]:
    return {"id": driver_id, "starttime": "1767225600000", "state": state, "cores": 1,
            "memory": 1024, "worker": worker,
            "mainclass": "org.apache.spark.deploy.PythonRunner"}  # fmt: skip


def app(name: str = JOB, state: str = "RUNNING") -> dict[str, Any]:
    return {"id": "app-20260101000001-0000", "name": name, "state": state, "cores": 2,
            "user": "spark", "starttime": 1767225601000, "duration": 5000}  # fmt: skip


def master(
    active: list[dict[str, Any]] | None = None,
    completed: list[dict[str, Any]] | None = None,
    apps: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    return {
        "url": "spark://127.0.0.1:7077",
        "workers": [{"id": WORKER, "host": "127.0.0.1", "port": 40123, "state": "ALIVE",
                     "cores": 4, "coresused": 2, "memory": 4096, "memoryused": 2048}],
        "aliveworkers": 1, "cores": 4, "coresused": 2,
        "activeapps": apps or [], "completedapps": [],
        "activedrivers": active or [], "completeddrivers": completed or [],
        "status": "ALIVE",
    }  # fmt: skip


def status_doc(
    driver_id: str, state: str = "RUNNING", batches: tuple[int | None, ...] = (3, 1), **extra: Any
) -> dict[str, Any]:
    """A ``status.json`` as the driver's StatusBoard writes it."""
    now = time.time()
    names = ["vehicles", "vehicle-stats-1m"]
    stages = {
        name: {"batch_id": batch, "last_batch_at": now - 5 - i if batch is not None else None,
               "input_rows_per_second": 100.0 + i, "processed_rows_per_second": 250.5,
               "ready": batch is not None}
        for i, (name, batch) in enumerate(zip(names, batches, strict=False))
    }  # fmt: skip
    return {"job": JOB, "state": state, "driver_id": driver_id, "version": "2",
            "started_at": now - 60, "stages": stages, **extra}  # fmt: skip


class Registry:
    """A registry over a temporary state root and a fake master; helpers to write files."""

    def __init__(self, root: Path) -> None:
        self.settings = Settings.from_env({}, state_root=str(root))
        self.master = FakeMaster()
        self.registry = JobRegistry(self.settings, cast(MasterClient, self.master))

    def status(self, doc: dict[str, Any]) -> None:
        write_json_atomic(self.settings.layout.status_file(JOB), doc)

    def submitted(self, driver_id: str, version: str = "1", at: float | None = None) -> None:
        append_jsonl(self.settings.layout.submissions_file(JOB), {
            "event": "submitted", "driver_id": driver_id, "version": version,
            "at": time.time() if at is None else at})  # fmt: skip

    def view(self, **state: Any) -> JobView:
        self.master.answer = master(**state)
        return self.registry.view(JOB)


@pytest.fixture
def reg(tmp_path: Path) -> Registry:
    return Registry(tmp_path / "state")


def test_not_submitted(reg: Registry) -> None:
    view = reg.view()
    assert view.state == "NOT_SUBMITTED"
    assert not view.is_live and not view.healthy
    assert view.version is None and view.driver_id is None
    assert view.driver_state is None and view.worker is None
    assert (view.last_batch_age, view.input_rows_per_second) == (None, None)
    assert view.stages == {}


def test_live_driver_found_by_status_driver_id(reg: Registry) -> None:
    reg.status(status_doc("driver-2"))
    view = reg.view(active=[driver("driver-1", "FINISHED"), driver("driver-2")], apps=[app()])
    assert (view.state, view.is_live, view.healthy) == ("RUNNING", True, True)
    assert (view.driver_id, view.driver_state) == ("driver-2", "RUNNING")
    assert view.worker == "127.0.0.1:40123"
    assert view.version == "2"
    assert view.last_batch_age == pytest.approx(5.0, abs=1.0)
    assert view.input_rows_per_second == 201.0  # summed over stages
    assert view.processed_rows_per_second == 501.0
    assert set(view.stages) == {"vehicles", "vehicle-stats-1m"}


def test_live_driver_found_by_last_submission(reg: Registry) -> None:
    reg.submitted("driver-1", version="1")
    reg.submitted("driver-2", version="2")
    view = reg.view(active=[driver("driver-2", "SUBMITTED", worker="")])
    assert (view.state, view.is_live, view.driver_id) == ("SUBMITTED", True, "driver-2")
    assert (view.driver_state, view.worker, view.version) == ("SUBMITTED", None, "2")
    assert not view.healthy


def test_running_driver_without_its_status_yet_is_starting(reg: Registry) -> None:
    reg.status(status_doc("driver-1"))  # the previous run's status
    reg.submitted("driver-1")
    reg.submitted("driver-2")
    view = reg.view(active=[driver("driver-2")], completed=[driver("driver-1", "KILLED")])
    assert (view.state, view.is_live, view.driver_id) == ("STARTING", True, "driver-2")
    assert not view.healthy  # the status belongs to driver-1


def test_relaunching_when_app_alive_but_driver_unknown(reg: Registry) -> None:
    reg.status(status_doc("driver-1"))
    reg.submitted("driver-1")
    view = reg.view(
        active=[driver("driver-7")],  # the relaunched driver has an id nobody recorded yet
        completed=[driver("driver-1", "FAILED")],
        apps=[app()],
    )
    assert view.state == "RELAUNCHING"
    assert view.is_live
    assert view.worker is None


def test_a_relaunch_after_a_node_loss_is_the_job_live_before_it_has_started(
    reg: Registry,
) -> None:
    """The defect: a warm cluster restart's node died under the driver answering its
    savepoint; the master relaunched the driver under a new id and no application of the job
    was live yet. The view said "not running (RELAUNCHING)", so the rollback restored the job
    beside its relaunch. Only the master's recovery file names the relaunch then."""
    reg.status(status_doc("driver-1"))
    reg.submitted("driver-1")
    persisted(reg, "driver-7", JOB)
    persisted(reg, "driver-8", "other-job")
    completed = [driver("driver-1", "RELAUNCHING")]
    for state in ("SUBMITTED", "RUNNING"):
        view = reg.view(active=[driver("driver-7", state=state), driver("driver-8")],
                        completed=completed)  # fmt: skip
        assert (view.is_live, view.driver_id, view.ended) == (True, "driver-7", False)
        assert view.state == ("SUBMITTED" if state == "SUBMITTED" else "STARTING")
        assert not view.healthy
    gone = reg.view(active=[driver("driver-8")], completed=completed)  # the relaunch ended
    assert (gone.is_live, gone.state) == (False, "RELAUNCHING")


def test_a_warm_standby_not_released_is_never_the_jobs_driver(reg: Registry) -> None:
    """The defect: the master was killed in the middle of a handover; the upgrade gave up
    after the old driver had stopped, before releasing its standby. The view took the armed
    standby (waiting for its go file, running nothing) for the job's driver, and a rollback
    waited 300 s for it to become healthy."""
    reg.status(status_doc("driver-1"))
    reg.submitted("driver-1")
    append_jsonl(reg.settings.layout.submissions_file(JOB), {
        "event": "submitted", "driver_id": "driver-2", "version": "2", "standby": True,
        "token": "tok", "at": time.time()})  # as submit_job records a warm standby; fmt: skip
    master_ = dict(active=[driver("driver-2")], completed=[driver("driver-1", "FINISHED")])
    view = reg.view(**master_)
    assert (view.is_live, view.driver_id, view.state) == (False, None, "FINISHED")
    write_json_atomic(reg.settings.layout.standby_go_file(JOB, "tok"), {"savepoint": "s"})
    view = reg.view(**master_)  # released: it runs the job now
    assert (view.is_live, view.driver_id) == (True, "driver-2")


def test_relaunching_job_is_not_healthy(reg: Registry) -> None:
    reg.status(status_doc("driver-1"))
    reg.submitted("driver-1")
    view = reg.view(active=[driver("driver-7")], completed=[driver("driver-1", "FAILED")],
                    apps=[app()])  # fmt: skip
    assert view.state == "RELAUNCHING"
    assert not view.healthy


@pytest.mark.parametrize("app_state", ["FINISHED", "KILLED"])
def test_only_running_or_waiting_apps_count(reg: Registry, app_state: str) -> None:
    reg.status(status_doc("driver-1"))
    view = reg.view(completed=[driver("driver-1", "FINISHED")], apps=[app(state=app_state)])
    assert not view.is_live


def test_other_apps_do_not_count(reg: Registry) -> None:
    reg.submitted("driver-1")
    view = reg.view(apps=[app(name="trade-analyser"), app(name="fleet-pings-2")])
    assert (view.state, view.is_live) == ("NOT_SUBMITTED", False)


@pytest.mark.parametrize("final", ["FINISHED", "FAILED", "KILLED", "ERROR"])
def test_finished_driver_state(reg: Registry, final: str) -> None:
    reg.status(status_doc("driver-1"))  # stale: the driver died without updating it
    reg.submitted("driver-1")
    view = reg.view(completed=[driver("driver-0", "FINISHED"), driver("driver-1", final)])
    assert (view.state, view.is_live, view.healthy) == (final, False, False)
    assert (view.driver_state, view.driver_id, view.worker) == (final, None, None)


def test_finished_driver_found_by_submission_only(reg: Registry) -> None:
    reg.submitted("driver-5", version="9")
    view = reg.view(completed=[driver("driver-5", "KILLED")])
    assert (view.state, view.driver_state, view.version) == ("KILLED", "KILLED", "9")


def test_active_driver_in_a_final_state_is_not_live(reg: Registry) -> None:
    reg.status(status_doc("driver-1"))
    view = reg.view(active=[driver("driver-1", "FAILED")])
    assert not view.is_live
    assert view.driver_state is None


@pytest.mark.parametrize("state", ["SUBMITTED", "RUNNING", "RELAUNCHING", "UNKNOWN"])
def test_live_driver_states(reg: Registry, state: str) -> None:
    reg.submitted("driver-1")
    view = reg.view(active=[driver("driver-1", state)])
    assert view.is_live and view.driver_state == state


def test_unknown_to_the_master_falls_back_to_the_status_state(reg: Registry) -> None:
    reg.status(status_doc("driver-1", state="STOPPED"))
    view = reg.view()
    assert (view.state, view.is_live, view.healthy) == ("STOPPED", False, False)


def test_cancelled_events_are_not_candidates(reg: Registry) -> None:
    reg.submitted("driver-1")
    append_jsonl(reg.settings.layout.submissions_file(JOB),
                 {"event": "cancelled", "driver_id": "driver-9", "at": time.time()})  # fmt: skip
    view = reg.view(active=[driver("driver-9")])
    assert (view.state, view.is_live) == ("NOT_SUBMITTED", False)


def test_status_driver_wins_over_submissions(reg: Registry) -> None:
    reg.status(status_doc("driver-3"))
    reg.submitted("driver-3")
    reg.submitted("driver-4")  # e.g. a second submit that is still queued
    view = reg.view(active=[driver("driver-3"), driver("driver-4", "SUBMITTED")])
    assert (view.driver_id, view.state, view.healthy) == ("driver-3", "RUNNING", True)


def test_worker_address_falls_back_to_the_worker_id(reg: Registry) -> None:
    reg.status(status_doc("driver-1"))
    view = reg.view(active=[driver("driver-1", worker="worker-gone")])
    assert view.worker == "worker-gone"


# --- healthy -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("doc", "healthy"),
    [
        (status_doc("driver-1"), True),
        (status_doc("driver-1", batches=(3, None)), False),  # a stage without a batch
        (status_doc("driver-1", batches=()), False),  # no stages at all
        (status_doc("driver-1", state="STARTING"), False),
        (status_doc("driver-1", state="STOPPING"), False),
        (status_doc("driver-0"), False),  # the status is another driver's
    ],
    ids=["running", "stage-without-batch", "no-stages", "starting", "stopping", "stale"],
)
def test_healthy_rules(reg: Registry, doc: dict[str, Any], healthy: bool) -> None:
    reg.status(doc)
    reg.submitted("driver-1")
    view = reg.view(active=[driver("driver-1")], apps=[app()])
    assert view.is_live
    assert view.healthy is healthy


def test_not_live_is_never_healthy(reg: Registry) -> None:
    reg.status(status_doc("driver-1"))
    assert not reg.view(completed=[driver("driver-1", "FINISHED")]).healthy


# --- registry ------------------------------------------------------------------------------
def test_list_reads_the_master_once(reg: Registry) -> None:
    reg.status(status_doc("driver-1"))
    reg.settings.layout.job_dir("trade-analyser").mkdir(parents=True)
    reg.master.answer = master(active=[driver("driver-1")])
    views = reg.registry.list()
    assert [v.name for v in views] == ["fleet-pings", "trade-analyser"]
    assert [v.state for v in views] == ["RUNNING", "NOT_SUBMITTED"]
    assert reg.master.calls == 1
    assert reg.registry.names() == ["fleet-pings", "trade-analyser"]


def test_view_refuses_unsafe_names(reg: Registry) -> None:
    with pytest.raises(UnsafeNameError):
        reg.registry.view("../etc")
    assert reg.master.calls == 0


def test_read_submissions_skips_a_torn_line(tmp_path: Path) -> None:
    path = tmp_path / "submissions.jsonl"
    assert read_submissions(path) == []
    path.write_text('{"event": "submitted", "driver_id": "d-1"}\n{"event": "subm', encoding="utf-8")
    assert read_submissions(path) == [{"event": "submitted", "driver_id": "d-1"}]


def test_a_second_live_instance_is_refused_but_for_the_one_it_replaces(reg: Registry) -> None:
    reg.status(status_doc("driver-1", state="STOPPED"))  # stopped by a savepoint with cancel
    reg.master.answer = master(active=[driver("driver-1")], apps=[app()])
    with pytest.raises(JobAlreadyRunning, match="driver-1"):
        ensure_not_running(reg.registry, JOB)
    with pytest.raises(JobAlreadyRunning, match="driver-1"):
        ensure_not_running(reg.registry, JOB, replacing="driver-0")
    ensure_not_running(reg.registry, JOB, replacing="driver-1")  # shutting down: no refusal
    reg.master.answer = master()
    ensure_not_running(reg.registry, JOB)


class KillingMaster(FakeMaster):
    """A master whose drivers die when killed (their application with the last one)."""

    def __init__(self, state: dict[str, Any]) -> None:
        super().__init__(state)
        self.killed: list[str] = []

    def active_drivers(self) -> list[DriverInfo]:
        return [DriverInfo.from_json(d) for d in self.answer["activedrivers"]]

    def kill_submission(self, driver_id: str) -> None:
        self.killed.append(driver_id)
        self.answer["activedrivers"] = [
            d for d in self.answer["activedrivers"] if d["id"] != driver_id
        ]
        if not self.answer["activedrivers"]:
            self.answer["activeapps"] = []


def hot_submitted(reg: Registry, driver_id: str) -> None:
    append_jsonl(reg.settings.layout.submissions_file(JOB), {
        "event": "submitted", "driver_id": driver_id, "version": "1", "hot_standby": True,
        "at": time.time()})  # fmt: skip


def test_a_hot_standby_is_shown_and_never_taken_for_the_job_s_driver(reg: Registry) -> None:
    reg.submitted("driver-1")
    hot_submitted(reg, "driver-2")
    # the primary starts (no status yet): the standby, submitted last, is not its driver
    view = reg.view(active=[driver("driver-1"), driver("driver-2")], apps=[app(), app()])
    assert (view.driver_id, view.standby) == ("driver-1", "driver-2 starting")
    reg.status(status_doc("driver-1"))
    write_json_atomic(reg.settings.layout.hot_standby_file(JOB),
                      {"driver_id": "driver-2", "armed_at": 1.0})  # fmt: skip
    view = reg.view(active=[driver("driver-1"), driver("driver-2")], apps=[app(), app()])
    assert (view.driver_id, view.standby, view.healthy) == ("driver-1", "driver-2 armed", True)
    # the standby took over; the relaunched primary (a new id) stands by in its turn
    reg.status(status_doc("driver-2"))
    write_json_atomic(reg.settings.layout.hot_standby_file(JOB),
                      {"driver_id": "driver-3", "armed_at": 1.0})  # fmt: skip
    view = reg.view(active=[driver("driver-2"), driver("driver-3")], apps=[app(), app()])
    assert (view.driver_id, view.standby) == ("driver-2", "driver-3 armed")
    beside = {"driver_id": "driver-3", "armed_at": 1.0, "beside_primary": True}
    write_json_atomic(reg.settings.layout.hot_standby_file(JOB), beside)
    view = reg.view(active=[driver("driver-2"), driver("driver-3")], apps=[app(), app()])
    assert view.standby == "driver-3 armed on the driver's worker"
    view = reg.view(active=[driver("driver-2")], apps=[app()])
    assert view.standby is None


def test_cancel_kills_the_hot_standby_before_the_driver(reg: Registry) -> None:
    """Killed first, the driver would leave its lease to the standby, which takes over."""
    reg.submitted("driver-1")
    hot_submitted(reg, "driver-2")
    reg.status(status_doc("driver-1"))
    reg.master = KillingMaster(master(active=[driver("driver-1"), driver("driver-2")],
                                      apps=[app(), app()]))  # fmt: skip
    reg.registry = JobRegistry(reg.settings, cast(MasterClient, reg.master))
    assert reg.registry.cancel(JOB, timeout=5) == ["driver-2", "driver-1"]  # all it killed
    assert reg.master.killed == ["driver-2", "driver-1"]


# --- every driver of a job: cancel, orphans --------------------------------------------
def persisted(reg: Registry, driver_id: str, app_name: str) -> None:
    """The master's FILESYSTEM recovery file of ``driver_id`` (Java serialization: a
    string is ``t``, its length on two bytes, its bytes), as it keeps every driver it has
    not finished, a relaunch waiting for cores among them."""
    opt = f"-Dspark.app.name={app_name}".encode()
    blob = (b"\xac\xed\x00\x05sr\x00(org.apache.spark.deploy.master.DriverInfo"
            b"t\x00\x1dorg.apache.spark.deploy.PythonRunnert" + len(opt).to_bytes(2, "big")
            + opt + b"t\x00\x0b-Dspark.x=1")  # fmt: skip
    recovery = reg.settings.layout.recovery_dir
    recovery.mkdir(parents=True, exist_ok=True)
    (recovery / f"driver_{driver_id}").write_bytes(blob)


def started(reg: Registry, driver_id: str) -> None:
    """A driver of the job appended itself when it started (a relaunch: a new id)."""
    append_jsonl(reg.settings.layout.drivers_file(JOB),
                 {"event": "started", "driver_id": driver_id, "at": time.time()})  # fmt: skip


def killing(reg: Registry, **state: Any) -> KillingMaster:
    reg.master = KillingMaster(master(**state))
    reg.registry = JobRegistry(reg.settings, cast(MasterClient, reg.master))
    return reg.master


def test_cancel_kills_orphans_the_master_relaunched_after_two_node_losses(reg: Registry) -> None:
    """The defect: the primary and its standby died with their nodes; their relaunches (new
    ids no submission names) waited for a primary, holding the last worker's cores. No
    application is live, the status names a dead driver: cancel found nothing to kill."""
    reg.submitted("driver-1")
    hot_submitted(reg, "driver-2")
    reg.status(status_doc("driver-2"))
    started(reg, "driver-5")  # a relaunch, started: it appended itself
    write_json_atomic(reg.settings.layout.hot_standby_file(JOB),
                      {"driver_id": "driver-6", "starting_at": 1.0})  # fmt: skip
    persisted(reg, "driver-7", JOB)  # relaunched, still waiting for cores: the master's file
    persisted(reg, "driver-8", "other-job")  # not this job's: left alone
    persisted(reg, "driver-9", "fleet-pings-2")  # a name this one begins: not this job's
    master_ = killing(reg, active=[driver("driver-5"), driver("driver-6"),
                                   driver("driver-7", state="SUBMITTED", worker="None"),
                                   driver("driver-8"), driver("driver-9")],
                      completed=[driver("driver-1", state="RELAUNCHING"),
                                 driver("driver-2", state="RELAUNCHING")])  # fmt: skip
    killed = reg.registry.cancel(JOB, timeout=5)
    assert sorted(killed) == ["driver-5", "driver-6", "driver-7"]
    assert sorted(master_.killed) == ["driver-5", "driver-6", "driver-7"]
    assert [d["id"] for d in master_.answer["activedrivers"]] == ["driver-8", "driver-9"]


def test_cancel_kills_the_standbys_and_relaunches_before_the_primary(reg: Registry) -> None:
    reg.submitted("driver-1")
    hot_submitted(reg, "driver-2")
    reg.status(status_doc("driver-3"))  # the standby took over; the relaunch of 1 is 3
    started(reg, "driver-3")
    write_json_atomic(reg.settings.layout.hot_standby_file(JOB),
                      {"driver_id": "driver-4", "armed_at": 1.0})  # fmt: skip
    persisted(reg, "driver-5", JOB)  # a relaunch waiting for cores
    lease_held = lease.acquire(reg.settings.layout, JOB, "driver-3")
    master_ = killing(reg, active=[driver("driver-3"), driver("driver-4"),
                                   driver("driver-5", state="SUBMITTED", worker="None")],
                      apps=[app(), app()])  # fmt: skip
    killed = reg.registry.cancel(JOB, timeout=5)
    assert master_.killed[-1] == "driver-3" and sorted(master_.killed[:-1]) == [
        "driver-4", "driver-5"]  # fmt: skip
    assert killed == master_.killed
    # no driver left: the lease is given up, so no late starter takes a dead holder's job
    after = lease.read_lease(reg.settings.layout, JOB)
    assert after is not None and after.epoch == lease_held.epoch and after.heartbeat_at == 0.0


def test_orphans_are_cleared_but_the_live_primary_and_its_standby(reg: Registry) -> None:
    reg.submitted("driver-1")
    hot_submitted(reg, "driver-2")
    reg.status(status_doc("driver-1"))
    write_json_atomic(reg.settings.layout.hot_standby_file(JOB),
                      {"driver_id": "driver-2", "armed_at": 1.0})  # fmt: skip
    started(reg, "driver-6")
    persisted(reg, "driver-7", JOB)
    master_ = killing(reg, active=[driver("driver-1"), driver("driver-2"), driver("driver-6"),
                                   driver("driver-7", state="SUBMITTED", worker="None")],
                      apps=[app(), app(), app()])  # fmt: skip
    assert reg.registry.clear_orphans(JOB) == ["driver-6", "driver-7"]
    assert master_.killed == ["driver-6", "driver-7"]
    assert reg.registry.clear_orphans(JOB) == []


def test_orphans_of_a_dead_job_are_every_driver_it_has_left(reg: Registry) -> None:
    reg.submitted("driver-1")
    hot_submitted(reg, "driver-2")
    reg.status(status_doc("driver-2"))
    started(reg, "driver-5")
    started(reg, "driver-6")
    master_ = killing(reg, active=[driver("driver-5"), driver("driver-6")])
    assert reg.registry.clear_orphans(JOB) == ["driver-5", "driver-6"]
    assert master_.answer["activedrivers"] == []
    recorded = [s for s in read_submissions(reg.settings.layout.submissions_file(JOB))
                if s.get("event") == "cancelled"]  # fmt: skip
    assert [r["driver_id"] for r in recorded] == ["driver-5", "driver-6"]


def test_submit_clears_the_job_s_orphans_first(
    reg: Registry, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`streamops submit` and `restart` (which submits) free the orphans' cores first."""
    from types import SimpleNamespace

    from streamops.spec import spec_from_dict
    from streamops.world import submit as submit_mod

    reg.submitted("driver-1")
    started(reg, "driver-5")
    master_ = killing(reg, active=[driver("driver-5")])
    created: list[str] = []

    def create(body: dict[str, Any]) -> str:
        assert master_.killed == ["driver-5"], "submitted beside the orphan"
        created.append("driver-10")
        return "driver-10"

    monkeypatch.setattr(master_, "create_submission", create, raising=False)
    monkeypatch.setattr(submit_mod, "check_spark_install", lambda: SimpleNamespace(version="4"))
    monkeypatch.setattr(submit_mod, "build_submission", lambda *a, **k: SimpleNamespace(
        rest_body=lambda version: {}))  # fmt: skip
    doc = {"name": JOB, "version": "1", "entrypoint": "spark_jobs.fleet_pings"}
    spec = spec_from_dict(doc, "test")
    driver_id = submit_mod.submit_job(spec, reg.settings, client=cast(MasterClient, master_))
    assert driver_id == "driver-10" and created == ["driver-10"]
