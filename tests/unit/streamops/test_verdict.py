"""One table of health-wait cases, run against every wait that judges a job's health.

(a) the pure verdict, (b) ``JobRegistry.wait_healthy`` (the CLI's submit, restart and
upgrade waits), (c) ``JobHealthyTrigger.run`` (the deferred Airflow waits) and (d)
``JobHealthySensor.poke``. The edge is what a registry observes: its ``view`` and
``driver_live`` answer from the case, the submissions file is real, in a temporary root.
So the waits cannot disagree about a case again, as they once did about a driver that died
during its start and was relaunched (the CLI accepted it, the DAGs failed it).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from airflow.sdk import PokeReturnValue

from streamops.exceptions import ClusterNotRunning, JobError
from streamops.job_view import JobView
from streamops.jobs import JobRegistry
from streamops.settings import Settings
from streamops.state.job_status import JobStatus
from streamops.state.layout import append_jsonl
from streamops.verdict import Observation, Outcome, health_verdict
from streamops_airflow.exceptions import ProcedureFailed
from streamops_airflow.hooks import connection_uri
from streamops_airflow.sensors import JobHealthySensor
from streamops_airflow.triggers import JobHealthyTrigger

JOB = "job"
SUBMITTED_AT = 1_767_225_600.0  # when driver-2, the driver being waited for, was submitted


def status(driver_id: str = "driver-2", state: str = "RUNNING", ready: bool = True,
           **extra: Any) -> JobStatus:  # fmt: skip
    """A ``status.json`` as the driver's StatusBoard writes it (one stage)."""
    return JobStatus.parse({"state": state, "driver_id": driver_id,
                            "started_at": SUBMITTED_AT + 20,
                            "stages": {"s": {"batch_id": 0 if ready else None, "ready": ready}},
                            **extra})  # fmt: skip


def view(**changes: Any) -> JobView:
    """A healthy job on driver-2; ``changes`` override the view's fields."""
    fields: dict[str, Any] = dict(
        name=JOB, version="2", state="RUNNING", is_live=True, driver_id="driver-2",
        driver_state="RUNNING", worker=None, last_batch_age=1.0, input_rows_per_second=None,
        processed_rows_per_second=None, status=status(),
    )  # fmt: skip
    fields.update(changes)
    return JobView(**fields)


@dataclass(frozen=True)
class Case:
    """What a wait observes and what every wait must conclude.

    ``since_live``: whether the master lists ``since`` as live (None: it did not answer).
    ``says``: a part of the verdict's message."""

    view: JobView
    outcome: Outcome
    says: str
    since: str | None = "driver-2"
    since_live: bool | None = False


CASES: dict[str, Case] = {
    "healthy": Case(view(), Outcome.HEALTHY, "job job v2 is healthy on driver driver-2"),
    "healthy, any driver": Case(
        view(driver_id="driver-3", status=status("driver-3")), Outcome.HEALTHY,
        "is healthy on driver driver-3", since=None,
    ),
    "idle stages are ready": Case(
        view(status=status(stages={"s": {"batch_id": None, "ready": True, "idle_since": 1.0}})),
        Outcome.HEALTHY, "is healthy on driver driver-2",
    ),
    "still starting: keep waiting": Case(
        view(state="STARTING", status=status(state="STARTING", ready=False)), Outcome.WAITING,
        "not healthy yet: state STARTING, driver RUNNING, stages s=None",
    ),
    "an older driver's failure: keep waiting": Case(
        view(state="STARTING", status=status("driver-1", state="FAILED", error="old")),
        Outcome.WAITING, "not healthy yet",
    ),
    # the contradiction resolved: the CLI's wait accepted this case, the DAGs' failed it
    "relaunched during start": Case(
        view(driver_id="driver-3", status=status("driver-3")), Outcome.FAILED,
        "driver driver-2 died during its start and was relaunched (driver-3)",
    ),
    "relaunched, not yet identified": Case(
        view(state="RELAUNCHING", driver_id=None, status=JobStatus()), Outcome.FAILED,
        "driver driver-2 died during its start and is being relaunched",
    ),
    "relaunching after its recorded error": Case(
        view(state="RELAUNCHING", status=status(state="FAILED", error="boom")), Outcome.FAILED,
        "died during its start and is being relaunched: boom",
    ),
    "relaunched, any driver": Case(
        view(state="RELAUNCHING", driver_id=None, status=JobStatus()), Outcome.WAITING,
        "not healthy yet: state RELAUNCHING", since=None,
    ),
    "failed on start": Case(
        view(status=status(state="FAILED", error="boom")), Outcome.FAILED,
        "job job failed on start (driver driver-2): boom",
    ),
    # a second driver refused by the lease exits cleanly (FINISHED) and writes no status: the
    # job still shows the lease holder, which started before the refused one was submitted
    "fenced": Case(
        view(driver_id="driver-1",
             status=status("driver-1", started_at=SUBMITTED_AT - 600)),  # fmt: skip
        Outcome.FAILED, "fenced off because driver-1 holds the job's lease",
    ),
    "handing over during an upgrade": Case(
        view(state="STOPPED", driver_id="driver-1",
             status=status("driver-1", state="STOPPED", started_at=SUBMITTED_AT - 600)),
        Outcome.WAITING, "driver driver-1 is handing over to driver driver-2", since_live=True,
    ),  # fmt: skip
    "healthy while the old driver is still listed": Case(
        view(), Outcome.HEALTHY, "healthy on driver driver-2", since_live=True
    ),
    "another driver, the master not answering": Case(
        view(state="STOPPED", driver_id="driver-1", status=status("driver-1", state="STOPPED")),
        Outcome.WAITING, "cannot tell yet whether driver driver-2 is still live",
        since_live=None,
    ),  # fmt: skip
    "driver ended": Case(
        view(state="FAILED", is_live=False, driver_id=None, driver_state="FAILED",
             status=JobStatus()),
        Outcome.FAILED, "did not become healthy: driver driver-2 ended FAILED",
    ),  # fmt: skip
    "driver ended, any driver": Case(
        view(state="KILLED", is_live=False, driver_id=None, driver_state="KILLED",
             status=status("driver-1", state="STOPPED")),
        Outcome.FAILED, "driver driver-1 ended KILLED", since=None,
    ),  # fmt: skip
}

table = pytest.mark.parametrize("case", list(CASES.values()), ids=list(CASES))


# --- (a) the verdict ------------------------------------------------------------------------
@table
def test_the_verdict(case: Case) -> None:
    seen = Observation(case.view, case.since, case.since_live,
                       SUBMITTED_AT if case.since else None)  # fmt: skip
    verdict = health_verdict(seen)
    assert (verdict.outcome, verdict.decided) == (case.outcome, case.outcome != "waiting")
    assert case.says in verdict.message


# --- the edge the waits observe -----------------------------------------------------------
@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings.from_env({}, state_root=str(tmp_path))


def observing(case: Case, settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    """Registries see ``case``: the master's view and liveness, and a real submissions file."""

    def driver_live(registry: JobRegistry, driver_id: str) -> bool:
        assert driver_id == case.since
        if case.since_live is None:
            raise ClusterNotRunning("the Spark master at 127.0.0.1:8080 does not answer")
        return case.since_live

    monkeypatch.setattr(JobRegistry, "view", lambda registry, name: case.view)
    monkeypatch.setattr(JobRegistry, "driver_live", driver_live)
    for driver_id, at in (("driver-1", SUBMITTED_AT - 700), ("driver-2", SUBMITTED_AT)):
        append_jsonl(settings.layout.submissions_file(JOB),
                     {"event": "submitted", "driver_id": driver_id, "at": at})  # fmt: skip


# --- (b) the registry's wait (CLI) --------------------------------------------------------
@table
def test_the_registry_wait(
    case: Case, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    observing(case, settings, monkeypatch)
    registry = JobRegistry(settings)
    if case.outcome is Outcome.HEALTHY:
        assert registry.wait_healthy(JOB, timeout=0, since_driver=case.since) is case.view
        return
    with pytest.raises(JobError) as raised:
        registry.wait_healthy(JOB, timeout=0, since_driver=case.since)
    if case.outcome is Outcome.FAILED:
        assert case.says in str(raised.value)
    else:
        assert "job job not healthy after 0s (state" in str(raised.value)


# --- (c) the trigger (deferred Airflow waits) ---------------------------------------------
@table
def test_the_trigger(case: Case, settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    observing(case, settings, monkeypatch)
    trigger = JobHealthyTrigger(job=JOB, settings=settings.model_dump(mode="json"), timeout=0,
                                since_driver=case.since, poll_interval=0.01)  # fmt: skip

    async def first_event() -> dict[str, Any]:
        async for event in trigger.run():
            return event.payload
        raise AssertionError("no event")

    event = asyncio.run(first_event())
    expected = {Outcome.HEALTHY: "healthy", Outcome.FAILED: "failed"}.get(case.outcome, "timeout")
    assert (event["status"], event["job"]) == (expected, JOB)
    if case.outcome is Outcome.WAITING:
        assert "job job not healthy after 0s (state" in event["message"]
    else:
        assert case.says in event["message"]


# --- (d) the sensor's poke ----------------------------------------------------------------
@table
def test_the_sensor(case: Case, settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    observing(case, settings, monkeypatch)
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_STANDALONE_DEFAULT", connection_uri(settings))
    sensor = JobHealthySensor(task_id="wait", job=JOB, since_driver=case.since)
    if case.outcome is Outcome.FAILED:
        with pytest.raises(ProcedureFailed) as raised:
            sensor.poke({})  # type: ignore[arg-type]
        assert case.says in str(raised.value)
        return
    got = sensor.poke({})  # type: ignore[arg-type]
    if case.outcome is Outcome.WAITING:
        assert got is False
    else:
        assert isinstance(got, PokeReturnValue) and got.xcom_value == case.view.driver_id


# --- observing ------------------------------------------------------------------------------
def test_the_master_is_asked_about_the_started_driver_only_when_another_is_shown(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_second_ask(registry: JobRegistry, driver_id: str) -> bool:
        raise AssertionError("driver_live asked although the view shows the started driver")

    monkeypatch.setattr(JobRegistry, "view", lambda registry, name: view())
    monkeypatch.setattr(JobRegistry, "driver_live", no_second_ask)
    seen = JobRegistry(settings).observe(JOB, "driver-2")
    assert (seen.since_live, seen.since_submitted_at) == (False, None)


def test_a_failure_quotes_the_recorded_error_once(settings: Settings) -> None:
    registry = JobRegistry(settings)
    crashed = view(status=status(state="FAILED", error="boom"))
    message = health_verdict(Observation(crashed, "driver-2")).message
    assert registry.failure_message(message, crashed, "driver-2") == message
    ended = view(is_live=False, driver_id=None, driver_state="FAILED", status=JobStatus())
    message = health_verdict(Observation(ended, "driver-2")).message
    detail = registry.failure_message(message, ended, "driver-2")
    assert detail == f"{message}. No driver log found."
