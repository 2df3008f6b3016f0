"""The driver's side of a handover: a stopped driver waits for its successor to run."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from spark_jobs.runtime.control import ControlLoop
from streamops.state.job_status import JobStatus
from streamops.state.layout import StateLayout, write_json_atomic


def loop_for(layout: StateLayout, driver_id: str) -> ControlLoop:
    board = SimpleNamespace(snapshot=lambda: JobStatus(driver_id=driver_id))
    return ControlLoop(SimpleNamespace(layout=layout, job="job", board=board))  # type: ignore[arg-type]


def status_later(layout: StateLayout, delay: float, doc: dict[str, Any]) -> None:
    def write() -> None:
        time.sleep(delay)
        write_json_atomic(layout.status_file("job"), doc)

    threading.Thread(target=write, daemon=True).start()


def test_waits_until_the_next_driver_runs(tmp_path: Path) -> None:
    layout = StateLayout.at(tmp_path)
    write_json_atomic(layout.status_file("job"), {"driver_id": "old", "state": "STOPPED"})
    status_later(layout, 0.3, {"driver_id": "new", "state": "STARTING"})
    status_later(layout, 0.8, {"driver_id": "new", "state": "RUNNING"})
    started = time.monotonic()
    loop_for(layout, "old")._await_successor(wait_s=10)
    assert 0.8 <= time.monotonic() - started < 5


def test_gives_up_when_no_successor_runs(tmp_path: Path) -> None:
    layout = StateLayout.at(tmp_path)
    write_json_atomic(layout.status_file("job"), {"driver_id": "old", "state": "STOPPED"})
    started = time.monotonic()
    loop_for(layout, "old")._await_successor(wait_s=0.5)
    assert time.monotonic() - started >= 0.5


def test_a_request_sent_to_a_previous_driver_is_answered_not_acted_on(tmp_path: Path) -> None:
    """A driver that died mid-savepoint leaves its request pending: the driver that took the
    job over (relaunched, or a hot standby) must not take it (with cancel: stop the job)."""
    from streamops_contract.state import control, lease

    layout = StateLayout.at(tmp_path)
    old = control.send_request(layout, "job", "savepoint", name="sp-1", cancel=True)
    time.sleep(0.01)
    held = lease.acquire(layout, "job", "driver-2")
    board = SimpleNamespace(snapshot=lambda: JobStatus(driver_id="driver-2"))
    ctx = SimpleNamespace(layout=layout, job="job", board=board, lease=held)
    handled: list[str] = []
    loop = ControlLoop(ctx)  # type: ignore[arg-type]
    loop._handle = lambda request, queries: handled.append(request.id) or False  # type: ignore[method-assign]
    new = control.send_request(layout, "job", "savepoint", name="sp-2")
    assert loop.poll({}) is None
    assert handled == [new.id]
    answer = control.read_result(layout, "job", old.id)
    assert answer is not None and not answer.ok
    assert "sent to a previous driver of job job, before driver driver-2" in answer.message


def test_a_sender_that_gives_up_withdraws_its_request(tmp_path: Path) -> None:
    from streamops_contract.state import control

    layout = StateLayout.at(tmp_path)
    request = control.send_request(layout, "job", "savepoint", name="sp-1", cancel=True)
    control.withdraw(layout, "job", request, "the driver went away")
    assert control.pending_requests(layout, "job") == []
    result = control.read_result(layout, "job", request.id)
    assert result is not None and "withdrawn by its sender: the driver went away" in result.message
    control.withdraw(layout, "job", request, "again")  # an answer already there is kept
    assert control.read_result(layout, "job", request.id) == result


def test_a_withdrawn_request_is_never_published_and_a_claimed_one_is_awaited(
    tmp_path: Path,
) -> None:
    """The one decision on a request: the sender withdrawing it (the driver went away) or the
    driver publishing its savepoint; whoever claims it first has it."""
    from streamops_contract.state import control

    layout = StateLayout.at(tmp_path)
    # the sender first: the driver (a Python outliving its killed JVM) may not publish
    first = control.send_request(layout, "job", "savepoint", name="sp-1")
    assert control.withdraw(layout, "job", first, "the driver went away")
    assert not control.claim(layout, "job", first, "driver driver-1")
    # the driver first: the sender does not withdraw it, and reads the answer that follows
    second = control.send_request(layout, "job", "savepoint", name="sp-2")
    assert control.claim(layout, "job", second, "driver driver-1")
    assert not control.withdraw(layout, "job", second, "the driver went away")
    assert control.read_result(layout, "job", second.id) is None
    threading.Timer(0.3, lambda: control.write_result(
        layout, "job", second, ok=True, message="savepoint written; job goes on")).start()
    answer = control.await_claimed(layout, "job", second, grace=5)
    assert answer is not None and answer.ok
    # a driver that claimed and died before answering: the sender waits its grace, no more
    third = control.send_request(layout, "job", "savepoint", name="sp-3")
    assert control.claim(layout, "job", third, "driver driver-1")
    assert control.await_claimed(layout, "job", third, grace=0.2) is None


def test_a_driver_whose_request_was_withdrawn_publishes_nothing(tmp_path: Path) -> None:
    import pytest

    from streamops_contract.state import control
    from streamops_contract.state.savepoints.create import create_savepoint

    layout = StateLayout.at(tmp_path)
    request = control.send_request(layout, "job", "savepoint", name="sp-late")
    assert control.withdraw(layout, "job", request, "the driver went away")
    stage = tmp_path / "checkpoint"
    for rel in ("offsets/0", "commits/0"):
        (stage / rel).parent.mkdir(parents=True, exist_ok=True)
        (stage / rel).write_text('v1\n{"batchWatermarkMs":0}\n{"file":"pings-1.csv"}')
    entry = {"batch_id": 0, "sources": [{"source": "alpha:/a", "file": "pings-1.csv"}],
             "stateful": False, "state": None, "descriptor": None}  # fmt: skip
    loop = loop_for(layout, "driver-1")

    with pytest.raises(control.Withdrawn, match="withdrawn by its sender"):
        create_savepoint(layout, "sp-late", job="job", version="1", stage_dirs={"s": stage},
                         stage_entries={"s": entry},
                         before_publish=lambda: loop._claim(request))  # fmt: skip
    assert not layout.savepoint("sp-late").exists()
    assert not [p for p in layout.savepoints_dir.iterdir() if "sp-late" in p.name]
    result = control.read_result(layout, "job", request.id)
    assert result is not None and result.message.startswith("withdrawn by its sender")
