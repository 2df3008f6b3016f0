"""A warm standby without an executor announces itself ready at once: no rehearsal, which
could run no task before the old version frees the cluster's cores (it waited out its
120 s timeout before)."""

from __future__ import annotations

import time
from pathlib import Path
from types import SimpleNamespace

from pyspark.sql import SparkSession

from spark_jobs.runtime import standby
from streamops.state.job_status import JobStatus
from streamops.state.layout import StateLayout, read_json


def test_a_standby_without_executors_skips_the_rehearsal(
    spark: SparkSession, tmp_path: Path
) -> None:
    layout = StateLayout.at(str(tmp_path))
    ctx = SimpleNamespace(  # the parts of a JobContext a warm-up reads, nothing started
        spec=SimpleNamespace(name="fleet", version="2"), layout=layout, job="fleet", spark=spark,
        stages=[SimpleNamespace(name="vehicles")], describe=lambda name: {"stage": name},
        gate=None, board=SimpleNamespace(snapshot=lambda: JobStatus(driver_id="driver-1")),
    )  # fmt: skip

    def build(_: object) -> None:
        raise AssertionError("no rehearsal without an executor")

    started = time.monotonic()
    standby.warm_up(ctx, "tok", executors=0, build=build)  # type: ignore[arg-type]
    ready = read_json(layout.standby_ready_file("fleet", "tok"))
    assert ready is not None
    assert ready["executors"] == 0 and ready["stages"] == {"vehicles": {"stage": "vehicles"}}
    assert ready["rehearsal"]["skipped"] == "no executor"
    print(f"standby ready without executors in {time.monotonic() - started:.2f} s")


def test_an_aborted_standby_stops_waiting_and_its_relaunch_exits(tmp_path: Path) -> None:
    """The defect: a warm standby's node died in a cluster restart's handover; the ops side
    killed the standby's id, but the master had relaunched it under another id, which waited
    for its go file forever, holding a driver's cores the relaunched job needed."""
    import threading

    from streamops.state.layout import write_json_atomic

    layout = StateLayout.at(str(tmp_path))
    got: list[str | None] = []
    waiter = threading.Thread(target=lambda: got.append(
        standby.wait_for_go(layout, "fleet", "tok", poll=0.01)))  # fmt: skip
    waiter.start()
    time.sleep(0.1)
    assert waiter.is_alive() and not standby.aborted(layout, "fleet", "tok")
    write_json_atomic(layout.standby_aborted_file("fleet", "tok"), {"driver_id": "driver-1"})
    waiter.join(5)
    assert got == [None]
    assert standby.aborted(layout, "fleet", "tok")
    assert not standby.aborted(layout, "fleet", "other")
