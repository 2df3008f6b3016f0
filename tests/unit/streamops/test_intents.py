"""The intent store: an intent is recorded and read back typed, a step resumes only for its
owner and only once, and the records of the older layout on disk still load (a procedure
interrupted before an upgrade of this code resumes)."""

from __future__ import annotations

from pathlib import Path

import pytest
from support import restart_fake
from support.upgrade_fake import JOB, FakeCluster, install

from streamops.exceptions import RestartFailed
from streamops.procedures import deploy, restart, savepoint_restart
from streamops.procedures.intents import already_started, read_intent
from streamops.state.layout import append_jsonl, write_json_atomic

OWNER = "airflow:restart_job/manual__1"


@pytest.fixture
def cluster(tmp_path: Path) -> FakeCluster:
    return install(tmp_path)


def test_an_intent_is_recorded_and_read_back_typed(cluster: FakeCluster) -> None:
    ops = cluster.ops
    assert read_intent(ops, JOB, "restart") == {}
    assert savepoint_restart.load_intent(ops, JOB) is None
    intent = savepoint_restart.begin(ops, JOB, OWNER, savepoint="sp-1")
    assert (cluster.settings.layout.job_dir(JOB) / "restart.json").is_file()
    loaded = savepoint_restart.load_intent(ops, JOB)
    assert loaded == intent and loaded.done == ["begin"] and loaded.phase == "planned"
    assert read_intent(ops, JOB, "restart")["spec"]["version"] == "1"  # the spec by value


def test_a_step_resumes_for_its_owner_only_and_once(cluster: FakeCluster) -> None:
    ops, store = cluster.ops, savepoint_restart.STORE
    with pytest.raises(RestartFailed, match="no restart of fleet-pings in progress; begin"):
        store.resume(ops, JOB, OWNER, "request_savepoint")
    savepoint_restart.begin(ops, JOB, OWNER, savepoint="sp-1")
    with pytest.raises(RestartFailed, match="is airflow:restart_job/manual__1's, not cli's"):
        store.resume(ops, JOB, "cli", "request_savepoint")
    assert store.resume(ops, JOB, OWNER, "request_savepoint")[1] is True
    assert store.resume(ops, JOB, OWNER, "begin")[1] is False  # done by a previous attempt


def test_nothing_to_resume_without_a_submission_since_the_intent(cluster: FakeCluster) -> None:
    ops = cluster.ops
    append_jsonl(cluster.settings.layout.submissions_file(JOB),
                 {"event": "submitted", "driver_id": "driver-old", "at": 1.0})  # fmt: skip
    assert already_started(ops, JOB, since=2.0) is None
    append_jsonl(cluster.settings.layout.submissions_file(JOB),
                 {"event": "submitted", "driver_id": "driver-old", "at": 3.0})  # fmt: skip
    assert already_started(ops, JOB, since=2.0) == "driver-old"


def test_a_restart_from_the_last_checkpoint_of_the_older_layout_resumes(tmp_path: Path) -> None:
    """The older layout wrote an untyped record (no spec): it loads as the one schema, and
    the re-run command resumes it: the cancel, then one resubmit with the job's last spec."""
    cluster = restart_fake.install(restart_fake.settings_at(tmp_path))
    write_json_atomic(cluster.settings.layout.intent_record(JOB, "restart"), {
        "phase": "cancel", "at": 10.0, "mode": "last-checkpoint", "driver_id": "driver-1"})
    intent = savepoint_restart.load_intent(cluster.ops, JOB)
    assert intent is not None and intent.mode == "last-checkpoint" and intent.owner == "cli"
    assert intent.stopped_driver == "driver-1" and intent.done == ["begin"]
    outcome = restart.restart_job(cluster.ops, JOB, "last-checkpoint")
    assert outcome.driver_id == "driver-2" and restart.resubmit(cluster.ops, JOB) == "driver-2"
    assert cluster.calls == ["cancel driver-1", "submit v1 from its checkpoints as driver-2",
                             "verify driver-2"]  # fmt: skip
    assert read_intent(cluster.ops, JOB, "restart")["phase"] == "done"


def test_a_deploy_of_the_older_layout_is_resumed_by_its_run(cluster: FakeCluster) -> None:
    """A DAG run's deploy recorded the older way (phase submit, no driver) and its driver
    submitted: the retried task resumes with it instead of failing on it."""
    write_json_atomic(cluster.settings.layout.intent_record(JOB, "deploy"), {
        "phase": "submit", "at": 1.0, "version": "1", "owner": OWNER})
    append_jsonl(cluster.settings.layout.submissions_file(JOB),
                 {"event": "submitted", "driver_id": "driver-old", "at": 2.0})  # fmt: skip
    assert deploy.start_job(cluster.ops, cluster.old, owner=OWNER) == "driver-old"
    assert cluster.calls == []
