"""Which spec counts as the running version when a warm standby was submitted beside it."""

from __future__ import annotations

from pathlib import Path

import pytest

from streamops.exceptions import JobNotFound
from streamops.job_reads import current_spec
from streamops.settings import Settings
from streamops.state.layout import append_jsonl, write_json_atomic

SPEC = {"name": "fleet", "entrypoint": "spark_jobs.fleet_pings", "trigger_interval": "1 second"}


def submitted(settings: Settings, driver: str, version: str, standby: bool = False) -> None:
    append_jsonl(
        settings.layout.submissions_file("fleet"),
        {"event": "submitted", "driver_id": driver, "version": version, "standby": standby,
         "spec": {**SPEC, "version": version}},
    )  # fmt: skip


def test_running_driver_wins_over_a_later_standby(tmp_path: Path) -> None:
    settings = Settings.from_env({}, state_root=str(tmp_path))
    with pytest.raises(JobNotFound):
        current_spec(settings, "fleet")
    submitted(settings, "driver-1", "1")
    submitted(settings, "driver-2", "2", standby=True)
    # no status yet: the last submission that was not a standby
    assert current_spec(settings, "fleet").version == "1"
    write_json_atomic(settings.layout.status_file("fleet"), {"driver_id": "driver-1"})
    assert current_spec(settings, "fleet").version == "1"
    # the standby went live and wrote its status
    write_json_atomic(settings.layout.status_file("fleet"), {"driver_id": "driver-2"})
    assert current_spec(settings, "fleet").version == "2"
