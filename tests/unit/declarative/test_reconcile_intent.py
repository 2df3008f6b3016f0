"""The reconcile's action in flight is an intent like the procedures' (kind ``reconcile``):
a record of the layout before (no phase) still loads and is resumed under its owner, an
action that ended is closed (done; failed when it changed nothing, shown by health; ended
when it changed the job), and health shows an action a killed pass left."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from support.reconcile_world import Killed, dep

from streamops.declarative import act, inflight, reconcile
from streamops.declarative.inflight import InFlight
from streamops.exceptions import JobError
from streamops.health.procedures import gather_procedures, procedure_result
from streamops.health.report import Level
from streamops.procedures import savepoint_restart
from streamops.settings import Settings
from streamops.state import intents
from streamops.state.declarative.resources import Deployment
from streamops.state.layout import write_json_atomic


def _on_disk(world: dict[str, Any], name: str = "a") -> dict[str, Any]:
    data = json.loads(world["store"].inflight_file("JobDeployment", name).read_text())
    assert isinstance(data, dict)
    return data


def test_an_inflight_record_of_the_older_layout_loads_and_is_resumed(
    world: dict[str, Any],
) -> None:
    store, settings = world["store"], world["settings"]
    store.apply(dep("a"))
    started = time.time() - 30
    spec = dep("a").spec.model_dump(mode="json")
    old = {"kind": "JobDeployment", "name": "a", "action": "deploy", "generation": 1,
           "detail": {"spec": spec}, "started_at": started, "updated_at": started + 1}
    write_json_atomic(store.inflight_file("JobDeployment", "a"), old)  # a pass of before, killed
    owner = f"reconcile:JobDeployment/a@{started:.3f}"

    record = inflight.STORE.load(store, "JobDeployment-a")
    assert record is not None and (record.phase, record.owner) == ("acting", owner)
    assert not record.finished and record.started_at == started
    result = reconcile.reconcile_once(settings)
    assert [a for _, a, _ in result.actions] == ["continue"]
    assert world["calls"] == [("a", "deploy", owner)]  # the procedures underneath resume
    assert world["details"][0]["spec"] == spec
    closed = _on_disk(world)
    assert (closed["phase"], closed["owner"], closed["done"]) == ("done", owner, ["deploy"])
    assert inflight.load(store, "JobDeployment", "a") is None
    assert store.deployment_status("a").phase == "Running"


def test_an_action_that_failed_having_changed_nothing_is_closed_as_failed_and_health_warns(
    world: dict[str, Any],
) -> None:
    store, settings = world["store"], world["settings"]
    store.apply(dep("a"))
    world["behaviour"]["a"] = JobError("the submission was refused: no space left on device")
    result = reconcile.reconcile_once(settings)
    assert result.errors
    closed = _on_disk(world)
    assert closed["phase"] == "failed" and closed["failed_step"] == "deploy"
    assert "no space left" in closed["failure"]
    assert inflight.load(store, "JobDeployment", "a") is None  # nothing left to resume
    status = store.deployment_status("a")  # the resource says the failure still
    assert status.failed and "no space left" in status.failed.message
    assert status.condition("Ready").status == "False"  # type: ignore[union-attr]

    (seen,) = gather_procedures(settings, [], 1)
    assert seen.closed and seen.key == "JobDeployment-a"
    checked = procedure_result(seen, seen.at + 60)
    assert checked.level is Level.WARN and checked.name == "procedure/reconcile/JobDeployment-a"
    for part in ("reconcile action deploy of JobDeployment/a", "no space left",
                 "it changed nothing", "apply JobDeployment/a again"):  # fmt: skip
        assert part in checked.message, checked.message


def test_an_action_that_failed_having_changed_the_job_is_ended_not_shown_as_failed(
    world: dict[str, Any], monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    """Its restart underneath stopped the job and stays to be resumed: that one's record
    says so in health, the reconcile's action is over."""
    store, settings = world["store"], world["settings"]
    store.apply(dep("a"))
    reconcile.reconcile_once(settings)

    def stopped(settings: Settings, record: InFlight, save: Any, d: Deployment) -> act.Outcome:
        restart = savepoint_restart.JobRestart(
            job="a", owner=record.owner, spec={}, version="1", savepoint="sp",
            cancel={"job": "a", "name": "sp", "cancel": True}, phase="stopped",
            done=["begin", "request_savepoint", "savepoint_answered", "job_stopped"])  # fmt: skip
        savepoint_restart.STORE.save(settings, restart, "stopped")
        raise JobError("restart of a (savepoint) failed: the start was refused")

    monkeypatch.setattr(act, "act_deployment", stopped)
    store.apply(dep("a", restart_nonce=1))
    assert reconcile.reconcile_once(settings).errors
    closed = _on_disk(world)
    assert closed["phase"] == "ended" and "start was refused" in closed["failure"]
    assert inflight.load(store, "JobDeployment", "a") is None
    kinds = [(p.kind, p.closed) for p in gather_procedures(settings, ["a"], 1)]
    assert kinds == [("restart", False)]


def test_health_shows_an_action_a_killed_pass_left(world: dict[str, Any]) -> None:
    store, settings = world["store"], world["settings"]
    store.apply(dep("a"))
    world["behaviour"]["a"] = Killed()
    with pytest.raises(Killed):
        reconcile.reconcile_once(settings)
    record = inflight.load(store, "JobDeployment", "a")
    assert record is not None
    (seen,) = gather_procedures(settings, [], 1)
    checked = procedure_result(seen, seen.since + 5)
    assert checked.level is Level.WARN  # it stops no job: a deploy
    for part in ("reconcile action deploy of JobDeployment/a (generation 1) has not finished",
                 f"owner {record.owner}", "phase acting", "begun ",
                 "the next reconcile pass resumes it first"):  # fmt: skip
        assert part in checked.message, checked.message
    (listed,) = intents.records(settings.layout, ["reconcile"])
    assert (listed.key, listed.owner, listed.phase) == ("JobDeployment-a", record.owner, "acting")
