"""The restart from a fresh savepoint over its intent, on a fake cluster at the edge (the
registry, the driver answering on the real control channel, the submission): a step retried
after it ran, or after a crash inside it, repeats no destructive step (no second savepoint
request, so no second cancel; no second submit); the restart, the rebalance and the cluster
restart all run these steps."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from support.restart_fake import JOB, FakeCluster, install, settings_at
from support.step_crash import dies_when_recording

from streamops.exceptions import JobError
from streamops.procedures import restart, savepoint_restart, scale
from streamops.procedures import savepoint_restart as steps
from streamops_contract.state import control

OWNER = "airflow:restart_job/manual__1"


@pytest.fixture
def cluster(tmp_path: Path) -> FakeCluster:
    return install(settings_at(tmp_path))


def run_step(cluster: FakeCluster, step: Any) -> None:
    """One step as its task runs it: a polling step is poked until it is done."""
    for _ in range(5):
        if step(cluster.ops, JOB, OWNER) is not False:
            return
    raise AssertionError(f"{step.__name__} never done")


def requests(cluster: FakeCluster) -> int:
    return len(list(cluster.settings.layout.control_dir(JOB).glob("*[!t].json")))


@pytest.mark.parametrize("retried", [s.__name__ for s in steps.STEPS])
def test_a_step_retried_after_it_ran_repeats_nothing(cluster: FakeCluster, retried: str) -> None:
    steps.begin(cluster.ops, JOB, OWNER, savepoint="sp-1")
    for step in steps.STEPS:
        run_step(cluster, step)
        if step.__name__ == retried:  # the task's retry: the same step again
            run_step(cluster, step)
    intent = steps.load_intent(cluster.ops, JOB)
    assert intent is not None and intent.phase == "done"
    assert intent.done == ["begin", *(s.__name__ for s in steps.STEPS)]
    assert requests(cluster) == 1 and cluster.count("savepoint sp-1 cancel=True") == 1
    assert cluster.submitted == 1 and intent.new_driver == "driver-2"
    assert cluster.calls[-1] == "verify driver-2"  # the one verdict, on the started driver


def test_a_request_recorded_but_not_sent_is_sent_once_under_its_id(
    cluster: FakeCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    steps.begin(cluster.ops, JOB, OWNER, savepoint="sp-1")
    send = control.send_request

    def died_before_writing(*args: Any, **kwargs: Any) -> Any:
        raise KeyboardInterrupt("the worker died")

    monkeypatch.setattr(control, "send_request", died_before_writing)
    with pytest.raises(KeyboardInterrupt):
        steps.request_savepoint(cluster.ops, JOB, OWNER)
    recorded = steps.load_intent(cluster.ops, JOB).savepoint_cancel().request  # type: ignore[union-attr]
    assert recorded and requests(cluster) == 0
    monkeypatch.setattr(control, "send_request", send)
    intent = steps.request_savepoint(cluster.ops, JOB, OWNER)
    assert intent.savepoint_cancel().request == recorded and requests(cluster) == 1


def test_a_start_interrupted_after_its_submission_is_not_submitted_again(
    cluster: FakeCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    steps.begin(cluster.ops, JOB, OWNER, savepoint="sp-1")
    for step in steps.SAVEPOINT_STEPS:
        run_step(cluster, step)
    with dies_when_recording(monkeypatch, steps.STORE, "started"):
        steps.start_from_savepoint(cluster.ops, JOB, OWNER)
    assert steps.start_from_savepoint(cluster.ops, JOB, OWNER).new_driver == "driver-2"
    assert cluster.submitted == 1


def test_a_failed_savepoint_is_requested_again_an_answered_one_is_not(
    cluster: FakeCluster,
) -> None:
    steps.begin(cluster.ops, JOB, OWNER, savepoint="sp-1")
    cluster.answering = False
    first = steps.request_savepoint(cluster.ops, JOB, OWNER).savepoint_cancel().request
    request = control.read_request(cluster.settings.layout, JOB, str(first))
    assert request is not None
    control.write_result(cluster.settings.layout, JOB, request, ok=False, message="no room")
    with pytest.raises(control.ControlFailed, match="no room"):
        steps.savepoint_answered(cluster.ops, JOB, OWNER)
    second = steps.request_savepoint(cluster.ops, JOB, OWNER).savepoint_cancel().request
    assert second != first and requests(cluster) == 2
    cluster.answering = True
    run_step(cluster, steps.savepoint_answered)
    again = steps.request_savepoint(cluster.ops, JOB, OWNER)
    assert again.savepoint_cancel().request == second
    assert requests(cluster) == 2


def test_another_owner_does_not_resume_the_restart(cluster: FakeCluster) -> None:
    steps.begin(cluster.ops, JOB, OWNER, savepoint="sp-1")
    with pytest.raises(steps.RestartFailed, match="is airflow:restart_job/manual__1's"):
        steps.request_savepoint(cluster.ops, JOB, "cli")
    assert requests(cluster) == 0


def test_the_cli_restart_runs_the_steps(cluster: FakeCluster) -> None:
    outcome = restart.restart_job(cluster.ops, JOB, "savepoint", savepoint="sp-cli")
    assert (outcome.mode, outcome.savepoint, outcome.driver_id) == ("savepoint", "sp-cli",
                                                                      "driver-2")
    assert cluster.calls == ["savepoint sp-cli cancel=True", "ended driver-1",
                             "submit v1 from sp-cli as driver-2", "verify driver-2"]
    intent = savepoint_restart.load_intent(cluster.settings, JOB)
    assert intent is not None and intent.owner == "cli" and intent.phase == "done"


def test_a_driver_left_after_the_savepoint_with_cancel_is_killed_before_the_start(
    cluster: FakeCluster,
) -> None:
    """A relaunch of the job waiting for cores (the master relaunched a driver it found
    unclaimed after it came back) is still listed once the restart stopped the job: the start
    from the savepoint kills it first instead of refusing "already running"."""
    cluster.left = ["driver-9"]
    outcome = restart.restart_job(cluster.ops, JOB, "savepoint", savepoint="sp-left")
    assert outcome.driver_id == "driver-2"
    assert cluster.calls == ["savepoint sp-left cancel=True", "ended driver-1", "cancel driver-9",
                             "submit v1 from sp-left as driver-2", "verify driver-2"]


def test_a_failed_start_keeps_the_savepoint(
    cluster: FakeCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    def unhealthy(job: str, *, timeout: float, since_driver: str | None = None) -> Any:
        raise JobError("it crashed on start")

    monkeypatch.setattr(cluster, "wait_healthy", unhealthy)
    with pytest.raises(JobError, match="crashed on start; savepoint sp-cli is kept"):
        restart.restart_job(cluster.ops, JOB, "savepoint", savepoint="sp-cli")


def test_the_rebalance_runs_the_steps_and_resumes_an_unfinished_one(
    cluster: FakeCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = iter([KeyboardInterrupt("the worker died"), None])
    start = cluster.start

    def submit_once_crashed(*args: Any, **kwargs: Any) -> str:
        failure = next(calls)
        if failure is not None:
            raise failure
        return start(*args, **kwargs)

    monkeypatch.setattr(cluster, "start", submit_once_crashed)
    with pytest.raises(KeyboardInterrupt):
        scale.rebalance_job(cluster.ops, JOB)
    assert scale._rebalancing(cluster.settings, JOB)  # stopped, not started: a candidate
    assert scale.rebalance_job(cluster.ops, JOB) == "driver-2"
    assert cluster.count("savepoint") == 1 and cluster.submitted == 1
    assert not scale._rebalancing(cluster.settings, JOB)


def _no_space_message(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """What a driver answers when its savepoint meets a full file system: the real savepoint
    code, with ENOSPC injected at the edge (the file copy)."""
    import errno

    from streamops.state.layout import StateLayout
    from streamops_contract.state.savepoints import copying
    from streamops_contract.state.savepoints.create import create_savepoint

    def full(*_: Any) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    layout = StateLayout.at(tmp_path / "full")
    stage = layout.checkpoint(JOB, "vehicles")
    (stage / "offsets").mkdir(parents=True)
    (stage / "offsets" / "0").write_text("v1")
    with monkeypatch.context() as m:
        m.setattr(copying, "copy_file", full)
        with pytest.raises(Exception) as failed:
            create_savepoint(layout, "sp", job=JOB, version="1", stage_dirs={"vehicles": stage},
                             stage_entries={"vehicles": {"batch_id": 0}})  # fmt: skip
    assert "No space left on device" in str(failed.value)
    return str(failed.value)


def test_a_restart_whose_savepoint_fails_on_a_full_disk_closes_its_intent_as_failed(
    cluster: FakeCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 44.2: the savepoint failed cleanly and the job ran on, but the intent stayed at
    savepoint-requested: health then said the job was stopped and `up` refused to submit."""
    from streamops.health.procedures import gather_procedures, procedure_result

    cluster.savepoint_error = _no_space_message(tmp_path, monkeypatch)

    with pytest.raises(JobError) as failed:
        restart.restart_job(cluster.ops, JOB, "savepoint", savepoint="sp-full")

    said = str(failed.value)
    assert "No space left on device" in said and "still runs" in said
    assert cluster.driver == "driver-1" and cluster.submitted == 0  # nothing was changed
    intent = savepoint_restart.load_intent(cluster.ops, JOB)
    assert intent is not None and intent.finished and intent.phase == "failed"
    assert "No space left on device" in str(intent.failure)
    seen = gather_procedures(cluster.settings, [JOB], 1)
    assert [p.stopped for p in seen] == [False]  # `up` holds back only for a stopped job
    result = procedure_result(seen[0], seen[0].at + 60)
    assert result.level == "warn"
    assert "No space left on device" in result.message and "still runs" in result.message
    assert "stopped" not in result.message and "has not finished" not in result.message

    cluster.savepoint_error = None  # space freed: the same command now restarts it
    restart.restart_job(cluster.ops, JOB, "savepoint", savepoint="sp-2")
    assert cluster.driver == "driver-2" and gather_procedures(cluster.settings, [JOB], 1) == []
