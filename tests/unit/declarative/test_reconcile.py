"""The reconcile pass around the decision, with the observation and the actions faked: the
action is recorded in flight before it runs, a killed pass is resumed (same record, same
owner), a failure is recorded and not repeated for the same generation, and one resource's
failure does not hold back another's."""

from __future__ import annotations

from typing import Any

import pytest
from support.reconcile_world import Killed, dep

from streamops.declarative import act, inflight, reconcile
from streamops.declarative.inflight import InFlight
from streamops.declarative.observe import ReconcileView
from streamops.exceptions import JobError
from streamops.settings import Settings
from streamops.state.declarative.resources import Deployment, SavepointRequest


def test_deploy_then_nothing(world: dict[str, Any]) -> None:
    store, settings = world["store"], world["settings"]
    store.apply(dep("a"))
    result = reconcile.reconcile_once(settings)
    assert result.ok and [a for _, a, _ in result.actions] == ["deploy"]
    status = store.deployment_status("a")
    assert (status.phase, status.driver, status.observed_generation) == ("Running", "driver-x", 1)
    assert status.condition("Ready").status == "True"  # type: ignore[union-attr]
    assert [a for _, a, _ in reconcile.reconcile_once(settings).actions] == ["none"]
    assert len(world["calls"]) == 1


def test_a_killed_pass_is_resumed_by_the_next(world: dict[str, Any]) -> None:
    store, settings = world["store"], world["settings"]
    store.apply(dep("a"))
    world["behaviour"]["a"] = Killed()
    with pytest.raises(Killed):
        reconcile.reconcile_once(settings)
    record = inflight.load(store, "JobDeployment", "a")
    assert record is not None and record.action == "deploy"
    assert store.deployment_status("a").phase == "Deploying"
    del world["behaviour"]["a"]
    result = reconcile.reconcile_once(settings)
    assert [a for _, a, _ in result.actions] == ["continue"]
    (first, second) = world["calls"]
    assert first == second  # the same action, the same owner: the procedures resume
    assert inflight.load(store, "JobDeployment", "a") is None
    assert store.deployment_status("a").phase == "Running"


def test_a_failure_is_recorded_once_per_generation_and_blocks_nothing(
    world: dict[str, Any],
) -> None:
    store, settings = world["store"], world["settings"]
    store.apply(dep("a"))
    store.apply(dep("b"))
    reconcile.reconcile_once(settings)
    store.apply(dep("a", spec={"version": "2"}))
    world["behaviour"]["a"] = JobError("v2 did not become healthy; rolled back to v1")
    result = reconcile.reconcile_once(settings)
    assert result.errors and "rolled back" in result.errors[0]
    status = store.deployment_status("a")
    assert status.failed and status.failed.action == "upgrade" and status.failed.generation == 2
    assert status.condition("Ready").status == "False"  # type: ignore[union-attr]
    assert inflight.load(store, "JobDeployment", "a") is None
    calls = len(world["calls"])
    assert reconcile.reconcile_once(settings).ok  # not tried again for generation 2
    assert len(world["calls"]) == calls
    # a suspend still goes through; so does a change of the other deployment
    store.apply(dep("a", spec={"version": "2"}, state="suspended"))
    store.apply(dep("b", spec={"version": "2"}))
    del world["behaviour"]["a"]
    reconcile.reconcile_once(settings)
    assert [(j, a) for j, a, _ in world["calls"][calls:]] == [("a", "suspend"), ("b", "upgrade")]


def test_master_down_waits_without_error(world: dict[str, Any], monkeypatch: pytest.MonkeyPatch,
                                         ) -> None:  # fmt: skip
    store, settings = world["store"], world["settings"]
    store.apply(dep("a"))
    store.apply(SavepointRequest(name="a-sp", job="a"))
    monkeypatch.setattr(
        reconcile,
        "observe",
        lambda *a, **k: ReconcileView(0.0, cluster_up=False, cluster_error="down"),
    )
    result = reconcile.reconcile_once(settings)
    assert result.ok and {a for _, a, _ in result.actions} == {"wait"}
    assert world["calls"] == []


def test_savepoint_request_for_a_job_not_running_fails(world: dict[str, Any]) -> None:
    store, settings = world["store"], world["settings"]
    store.apply(SavepointRequest(name="x-sp", job="x", cancel=True))
    result = reconcile.reconcile_once(settings)
    status = store.request_status("x-sp")
    assert status.state == "Failed" and "job x is not running" in status.message
    assert result.errors
    assert reconcile.reconcile_once(settings).ok  # ended: nothing more


def test_delete_removes_a_deployment_whose_job_does_not_run(world: dict[str, Any]) -> None:
    store, settings = world["store"], world["settings"]
    store.apply(dep("a", state="suspended"))
    reconcile.reconcile_once(settings)
    store.mark_deleting("JobDeployment", "a")
    result = reconcile.reconcile_once(settings)
    assert [a for _, a, _ in result.actions] == ["remove"]
    assert store.names("JobDeployment") == []


def test_a_refused_plan_leaves_the_job_running_and_a_suspend_goes_through(
    world: dict[str, Any],
) -> None:
    store, settings = world["store"], world["settings"]
    store.apply(dep("a"))
    reconcile.reconcile_once(settings)
    store.apply(dep("a", spec={"version": "2"}))
    plan = "upgrade plan a v1 → v2\n  INCOMPATIBLE  counts: keys changed\nverdict: REFUSED"
    real = act.act_deployment

    def refused(settings: Settings, record: InFlight, save: Any, d: Deployment) -> act.Outcome:
        if record.action == "upgrade":
            world["calls"].append((d.name, record.action, record.owner))
            return act.Outcome("refused", blocked_plan=plan)
        return real(settings, record, save, d)

    act.act_deployment = refused  # type: ignore[assignment]
    try:
        assert reconcile.reconcile_once(settings).ok  # refused is no error: the job runs on
        status = store.deployment_status("a")
        blocked = status.condition("UpgradeBlocked")
        assert blocked and blocked.status == "True" and blocked.message == plan
        assert status.phase == "Running" and status.version == "1"
        calls = len(world["calls"])
        reconcile.reconcile_once(settings)
        assert len(world["calls"]) == calls  # not planned again for this generation
        store.apply(dep("a", spec={"version": "2"}, state="suspended"))
        reconcile.reconcile_once(settings)
        assert world["calls"][-1][1] == "suspend"
        assert store.deployment_status("a").phase == "Suspended"
    finally:
        act.act_deployment = real  # type: ignore[assignment]


@pytest.mark.parametrize("initial", [None, "sp-blessed"])
def test_a_deployment_applied_again_after_its_deletion_starts_its_job(
    world: dict[str, Any], initial: str | None
) -> None:
    """Issue 44.5: `delete deployment transactions`, then `apply -f` with `state: running`
    (generation 1) left the job stopped ("cancelled by savepoint request … apply a change").
    It starts, from its ``initial_savepoint`` if it names one, else from the savepoint its
    deletion took (docs/operations.md)."""
    store, settings = world["store"], world["settings"]
    store.apply(dep("transactions"))
    reconcile.reconcile_once(settings)
    store.mark_deleting("JobDeployment", "transactions")
    result = reconcile.reconcile_once(settings)
    assert [a for _, a, _ in result.actions] == ["suspend", "remove"]
    assert store.names("JobDeployment") == []
    taken = world["jobs"]["transactions"].stopped_by
    assert taken

    applied, _ = store.apply(dep("transactions", state="running", initial_savepoint=initial))
    assert applied.generation == 1
    result = reconcile.reconcile_once(settings)

    assert result.ok and [a for _, a, _ in result.actions] == ["deploy"]
    assert world["details"][-1]["savepoint"] == (initial or taken)
    assert store.deployment_status("transactions").phase == "Running"
    assert world["jobs"]["transactions"].live
    assert [a for _, a, _ in reconcile.reconcile_once(settings).actions] == ["none"]
