"""The job's JSON-lines records of the contract: what each line holds, and a torn last line
after a crash skipped by the reader."""

from __future__ import annotations

from pathlib import Path

from streamops_contract.records import (
    Cancellation,
    DriverStart,
    SubmissionRecord,
    append_record,
    read_jsonl,
)


def test_records_are_written_as_one_json_line_each_and_read_back(tmp_path: Path) -> None:
    path = tmp_path / "jobs" / "j" / "submissions.jsonl"
    append_record(path, SubmissionRecord("driver-1", "2", {"name": "j"}, at=1.0))
    append_record(path, SubmissionRecord("driver-2", "2", {}, standby=True, token="t", at=2.0))
    append_record(path, Cancellation("driver-1", at=3.0))
    with open(path, "a", encoding="utf-8") as fh:
        fh.write('{"event": "submitted", "driv')  # torn by a crash
    first, second, cancelled = read_jsonl(path)
    assert first == {"event": "submitted", "driver_id": "driver-1", "version": "2",
                     "spec": {"name": "j"}, "standby": False, "hot_standby": False,
                     "at": 1.0}  # fmt: skip  # no token unless a warm standby's
    assert second["standby"] is True and second["token"] == "t"
    assert cancelled == {"event": "cancelled", "driver_id": "driver-1", "at": 3.0}


def test_a_driver_start(tmp_path: Path) -> None:
    path = tmp_path / "drivers.jsonl"
    append_record(path, DriverStart("driver-3", 42, hot_standby=True, at=5.0))
    assert read_jsonl(path) == [{"event": "started", "driver_id": "driver-3", "pid": 42,
                                 "hot_standby": True, "standby": None, "at": 5.0}]  # fmt: skip
    assert read_jsonl(tmp_path / "absent.jsonl") == []
