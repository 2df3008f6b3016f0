"""The ops side of the control protocol: waiting for the driver's answer."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from streamops.state.layout import StateLayout, write_json_atomic
from streamops_contract.state import control
from streamops_contract.state.control import ControlFailed


@pytest.fixture
def layout(tmp_path: Path) -> StateLayout:
    return StateLayout.at(tmp_path / "state")


def answer_later(layout: StateLayout, request: control.ControlRequest, ok: bool) -> None:
    def write() -> None:
        time.sleep(0.3)
        write_json_atomic(
            layout.control_dir("job") / f"{request.id}.result.json",
            {"id": request.id, "ok": ok, "message": "m", "finished_at": time.time(),
             "detail": {"savepoint": "sp"}},
        )  # fmt: skip

    threading.Thread(target=write, daemon=True).start()


def test_the_answer_is_returned(layout: StateLayout) -> None:
    request = control.send_request(layout, "job", "savepoint", name="sp", timeout=5)
    answer_later(layout, request, ok=True)
    asked: list[float] = []
    result = control.wait_result(layout, "job", request,
                                 still_alive=lambda: asked.append(1) is None)  # fmt: skip
    assert result.detail == {"savepoint": "sp"}
    assert len(asked) <= 1  # the master is asked once a second, not at every look


def test_a_failed_answer_raises(layout: StateLayout) -> None:
    request = control.send_request(layout, "job", "stop", timeout=5)
    answer_later(layout, request, ok=False)
    with pytest.raises(ControlFailed, match="stop .* failed: m"):
        control.wait_result(layout, "job", request)


def test_a_driver_that_went_away(layout: StateLayout) -> None:
    request = control.send_request(layout, "job", "stop", timeout=30)
    with pytest.raises(ControlFailed, match="went away"):
        control.wait_result(layout, "job", request, still_alive=lambda: False, alive_every=0.1)



def test_a_handover_is_asked_only_with_cancel(layout: StateLayout) -> None:
    control.send_request(layout, "job", "savepoint", name="a", cancel=True, handover=True)
    control.send_request(layout, "job", "savepoint", name="b", handover=True)
    found = {r.name: r.handover for r in control.pending_requests(layout, "job")}
    assert found == {"a": True, "b": False}
