"""The upgrade's steps over its intent: a retried step resumes, never repeats a destructive
step (a standby, a savepoint request, a start); the spec started is the one planned; a
failure rolls back only what the upgrade stopped."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.step_crash import dies_when_recording
from support.upgrade_fake import JOB, V2, FakeCluster, install

from streamops.exceptions import JobError
from streamops.procedures import upgrade_steps as steps
from streamops.procedures.intents import read_intent
from streamops.procedures.upgrade import UpgradeFailed, upgrade
from streamops.spec import load_spec

OWNER = "airflow:savepoint_and_upgrade/manual__1"
WAITS = {"start_standby": 5.0, "savepoint_answered": 0.0, "verify": 5.0}


@pytest.fixture
def cluster(tmp_path: Path) -> FakeCluster:
    return install(tmp_path)


def run_step(cluster: FakeCluster, step: object, owner: str = OWNER) -> None:
    """One step, as its task runs it (the fake old driver answers when waited for)."""
    name = step.__name__  # type: ignore[attr-defined]
    kwargs = {"timeout": WAITS[name]} if name in WAITS else {}
    step(cluster.ops, JOB, owner, **kwargs)  # type: ignore[operator]


def destructive(cluster: FakeCluster) -> dict[str, int]:
    return {what: cluster.count(what) for what in ("standby", "release", "start from")} | {
        "requests": len(list(cluster.settings.layout.control_dir(JOB).glob("*[!t].json")))
    }


@pytest.mark.parametrize("mode", ["warm", "cold"])
@pytest.mark.parametrize("retried", [s.__name__ for s in steps.STEPS])
def test_a_step_retried_after_it_ran_repeats_nothing(
    cluster: FakeCluster, mode: str, retried: str
) -> None:
    steps.plan(cluster.ops, JOB, OWNER, load_spec(V2), standby=mode)
    for step in steps.STEPS:
        run_step(cluster, step)
        if step.__name__ == retried:  # the task's retry: the same step again
            run_step(cluster, step)
    intent = steps.load_intent(cluster.ops, JOB)
    assert intent is not None and intent.phase == "done"
    assert intent.done == ["plan", *(s.__name__ for s in steps.STEPS)]
    warm = mode == "warm"
    assert destructive(cluster) == {"standby": int(warm), "release": int(warm),
                                    "start from": int(not warm), "requests": 1}  # fmt: skip
    assert intent.new_driver == ("driver-standby" if warm else "driver-new")


def test_a_start_interrupted_after_its_submission_is_not_submitted_again(
    cluster: FakeCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The driver was submitted, the worker died before the intent said so: the retry finds
    the submission made since the recorded phase (``already_started``)."""
    steps.plan(cluster.ops, JOB, OWNER, load_spec(V2), standby="cold")
    for step in steps.STEPS[:3]:
        run_step(cluster, step)
    with dies_when_recording(monkeypatch, steps.STORE, "new-version-started"):
        steps.start_new_version(cluster.ops, JOB, OWNER)
    assert steps.start_new_version(cluster.ops, JOB, OWNER).new_driver == "driver-new"
    assert cluster.count("start from") == 1


def test_a_failed_savepoint_answer_is_requested_again_an_answered_one_is_not(
    cluster: FakeCluster,
) -> None:
    cluster.auto_answer = False
    steps.plan(cluster.ops, JOB, OWNER, load_spec(V2), standby="cold")
    steps.start_standby(cluster.ops, JOB, OWNER)
    first = steps.request_savepoint(cluster.ops, JOB, OWNER).request
    cluster.answer(ok=False)
    with pytest.raises(JobError, match="failed"):
        steps.savepoint_answered(cluster.ops, JOB, OWNER)
    second = steps.request_savepoint(cluster.ops, JOB, OWNER).request  # the retry
    assert second != first
    cluster.answer()
    assert steps.request_savepoint(cluster.ops, JOB, OWNER).request == second
    assert steps.savepoint_answered(cluster.ops, JOB, OWNER)


def test_the_version_started_is_the_version_planned(cluster: FakeCluster, tmp_path: Path) -> None:
    """The spec is read once: editing its file during the upgrade changes nothing."""
    path = tmp_path / "v2.yaml"
    path.write_text(V2.read_text())
    steps.plan(cluster.ops, JOB, OWNER, load_spec(path), standby="cold")
    path.write_text(V2.read_text().replace('version: "2"', 'version: "9"'))
    for step in steps.STEPS:
        run_step(cluster, step)
    assert cluster.calls[-1].startswith("start from") and " v2 " in cluster.calls[-1]
    assert read_intent(cluster.settings, JOB, "upgrade")["new_spec"]["version"] == "2"


def test_another_owner_does_not_resume_nor_run_steps(cluster: FakeCluster) -> None:
    steps.plan(cluster.ops, JOB, OWNER, load_spec(V2), standby="cold")
    with pytest.raises(UpgradeFailed, match="not airflow:other/run's"):
        steps.start_standby(cluster.ops, JOB, "airflow:other/run")
    again = steps.plan(cluster.ops, JOB, OWNER, load_spec(V2), standby="cold")
    assert again.done == ["plan"]  # resumed, not planned anew


def test_a_standby_that_does_not_come_up_ends_the_upgrade_untouched(
    cluster: FakeCluster,
) -> None:
    cluster.standby_error = "standby failed before it was ready"
    with pytest.raises(UpgradeFailed, match="did not come up.*v1 was not stopped"):
        upgrade(cluster.ops, JOB, load_spec(V2), standby="warm")
    assert read_intent(cluster.settings, JOB, "upgrade")["phase"] == "standby-failed"
    assert cluster.calls == [] and "driver-old" in cluster.live


def test_an_unhealthy_new_version_is_rolled_back_from_the_same_savepoint(
    cluster: FakeCluster,
) -> None:
    cluster.healthy = False
    steps.plan(cluster.ops, JOB, "cli", load_spec(V2), standby="warm",
               savepoint="sp-up")  # fmt: skip
    for step in steps.STEPS[:4]:
        run_step(cluster, step, "cli")
    with pytest.raises(JobError, match="not healthy"):
        steps.verify(cluster.ops, JOB, "cli", timeout=1)
    undo = steps.rollback(cluster.ops, JOB, "cli", "not healthy")
    assert undo.rolled_back and "rolled back to v1 from savepoint sp-up" in undo.message
    assert cluster.calls[-1] == "rollback to v1 from sp-up"
    assert read_intent(cluster.settings, JOB, "upgrade")["phase"] == "rolled-back"


def test_a_healthy_new_version_is_not_rolled_back_when_a_verify_task_failed_otherwise(
    cluster: FakeCluster,
) -> None:
    """The DAG's rollback task runs when its verify task failed, which an Airflow restart
    under the task does too: asked without a reason, the rollback judges the job first, and
    a new version healthy on its driver is left running (the upgrade to be finished)."""
    steps.plan(cluster.ops, JOB, "cli", load_spec(V2), standby="warm",
               savepoint="sp-up")  # fmt: skip
    for step in steps.STEPS[:4]:
        run_step(cluster, step, "cli")
    undo = steps.rollback(cluster.ops, JOB, "cli")
    assert not undo.rolled_back and "is healthy on driver" in undo.message, undo.message
    assert "rollback" not in " ".join(cluster.calls)
    assert read_intent(cluster.settings, JOB, "upgrade")["phase"] != "rolled-back"
    cluster.healthy = False
    undo = steps.rollback(cluster.ops, JOB, "cli")
    assert undo.rolled_back and cluster.calls[-1] == "rollback to v1 from sp-up"


def test_a_failed_savepoint_aborts_the_standby_and_rolls_nothing_back(
    cluster: FakeCluster,
) -> None:
    cluster.auto_answer = False
    steps.plan(cluster.ops, JOB, OWNER, load_spec(V2), standby="warm", savepoint="sp-x")
    steps.start_standby(cluster.ops, JOB, OWNER)
    steps.request_savepoint(cluster.ops, JOB, OWNER)
    cluster.answer(ok=False)
    undo = steps.rollback(cluster.ops, JOB, OWNER)
    assert not undo.rolled_back and "savepoint sp-x was not taken" in undo.message
    assert steps.abort_standby(cluster.ops, JOB, OWNER) is True
    assert cluster.calls[-1] == "abort driver-standby"
    assert read_intent(cluster.settings, JOB, "upgrade")["phase"] == "aborted"
    with pytest.raises(UpgradeFailed, match="is aborted"):  # the request task cleared
        steps.request_savepoint(cluster.ops, JOB, OWNER)


def test_the_cli_runs_the_steps_in_a_loop(cluster: FakeCluster) -> None:
    outcome = upgrade(cluster.ops, JOB, load_spec(V2), standby="auto", savepoint="sp-cli")
    assert (outcome.from_version, outcome.to_version) == ("1", "2")
    assert outcome.driver_id == "driver-standby" and outcome.savepoint == "sp-cli"
    assert outcome.savepoint_s >= 0 and outcome.start_s >= 0
    assert cluster.calls == ["standby v2 as driver-standby",
                             "release driver-standby from sp-cli"]  # fmt: skip
    assert "driver-old" not in cluster.live  # it ended after its handover


def test_the_cli_rolls_back_an_unhealthy_version(cluster: FakeCluster) -> None:
    cluster.healthy = False
    with pytest.raises(UpgradeFailed, match="rolled back to v1 from savepoint sp-bad"):
        upgrade(cluster.ops, JOB, load_spec(V2), savepoint="sp-bad")  # cold
    assert cluster.calls[-1] == "rollback to v1 from sp-bad"


def test_without_a_handover_the_new_version_starts_at_once_and_finish_waits_for_the_old(
    cluster: FakeCluster,
) -> None:
    """The answer means the old driver's queries are stopped and its lease given up: the new
    version is started while the old driver still shuts down; ``finish`` waits for its end."""
    from streamops_contract.state import control

    cluster.auto_answer = False
    cluster.handover_fits = False
    steps.plan(cluster.ops, JOB, OWNER, load_spec(V2), standby="cold")
    steps.start_standby(cluster.ops, JOB, OWNER)
    intent = steps.request_savepoint(cluster.ops, JOB, OWNER)
    assert intent.handover is False
    assert steps.savepoint_answered(cluster.ops, JOB, OWNER) is False  # not answered
    request = control.read_request(cluster.settings.layout, JOB, str(intent.request))
    assert request is not None and request.handover is False
    cluster.savepoints.add(intent.savepoint)
    control.write_result(cluster.settings.layout, JOB, request, ok=True, message="saved",
                         detail={"handover": False})  # fmt: skip
    assert steps.savepoint_answered(cluster.ops, JOB, OWNER) is True
    assert "driver-old" in cluster.live  # still shutting down
    steps.start_new_version(cluster.ops, JOB, OWNER)
    steps.verify(cluster.ops, JOB, OWNER, timeout=1)
    assert steps.finish(cluster.ops, JOB, OWNER).phase == "done"
    assert "driver-old" not in cluster.live
