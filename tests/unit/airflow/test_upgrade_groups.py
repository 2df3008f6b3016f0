"""The upgrade's rollback step acts only when the run stopped the old version: a run that
failed at its plan, at its warm standby or at its savepoint leaves the old version alone."""

from __future__ import annotations

from pathlib import Path

import pytest
from airflow.sdk.exceptions import AirflowSkipException

from streamops.settings import Settings
from streamops_airflow import job_groups

CTX = {"job": "fleet", "savepoint": "fleet-v1-to-v2", "from_version": "1", "to_version": "2",
       "rollback_spec": {"name": "fleet", "version": "1"}, "old_driver": "driver-old"}  # fmt: skip


def test_a_run_that_failed_at_its_plan_rolls_nothing_back() -> None:
    with pytest.raises(AirflowSkipException, match="failed before its plan"):
        job_groups.rollback.function(None, "start_new_version", "upgrade")


def test_an_upgrade_that_took_no_savepoint_rolls_nothing_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """E.g. its warm standby did not come up: the old driver was never asked to stop, and
    killing it to restart it from a savepoint that does not exist would lose the job."""
    settings = Settings.from_env({}, state_root=str(tmp_path))
    # the edge: only the settings are handed out; nothing may reach the cluster
    monkeypatch.setattr(job_groups, "ops_settings", lambda *_: settings)
    monkeypatch.setattr(job_groups, "rollback_job", lambda *a, **k: pytest.fail("rolled back"))
    with pytest.raises(AirflowSkipException, match="savepoint fleet-v1-to-v2 was not taken"):
        job_groups.rollback.function(CTX, "start_new_version", "upgrade", "start_standby")
