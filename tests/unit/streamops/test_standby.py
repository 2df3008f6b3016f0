"""How many executors a warm standby can get beside the running version, and whether an
upgrade's old driver may idle (hand over) beside the new version."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from streamops.cluster.client import WorkerInfo
from streamops.spec import spec_from_dict
from streamops.standby import Standby, handover_fits, standby_executors


def worker(cores: int, used: int, state: str = "ALIVE") -> WorkerInfo:
    return WorkerInfo.from_json({"id": f"w{cores}{used}", "state": state, "cores": cores,
                                 "coresused": used})  # fmt: skip


@dataclass
class FakeClient:  # the master's JSON, at the edge of this unit test
    listed: list[WorkerInfo] = field(default_factory=list)

    def workers(self) -> list[WorkerInfo]:
        return self.listed


@dataclass
class FakeRegistry:
    client: FakeClient


SPEC = spec_from_dict({
    "name": "fleet", "version": "2", "entrypoint": "spark_jobs.fleet_pings_v2",
    "resources": {"driver_cores": 1, "executor_cores": 1, "max_cores": 2},
})  # fmt: skip


@pytest.mark.parametrize(
    ("workers", "expected"),
    [
        ([worker(4, 3), worker(4, 0)], 2),  # room for the driver and both executors
        ([worker(2, 2), worker(2, 1)], 0),  # the driver takes the last free core
        ([worker(2, 1), worker(2, 0)], 2),
        ([worker(4, 1), worker(4, 4)], 2),
        ([worker(4, 2), worker(4, 0, state="DEAD")], 1),  # a dead worker offers nothing
    ],
)
def test_standby_gets_the_executors_free_cores_allow(
    workers: list[WorkerInfo], expected: int
) -> None:
    registry = FakeRegistry(FakeClient(workers))
    assert standby_executors(registry, SPEC) == expected  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("workers", "fits"),
    [
        ([worker(4, 3), worker(4, 0)], True),  # v1's 3 cores used, 5 free: v2 needs 3
        ([worker(2, 2), worker(2, 1)], False),  # the test cluster: 1 free, v2's executors wait
        ([worker(2, 1), worker(2, 0)], True),
        ([worker(4, 1), worker(4, 4, state="DEAD")], True),
        ([worker(2, 1), worker(2, 4, state="DEAD")], False),  # a dead worker offers nothing
    ],
)
def test_a_cold_handover_needs_room_for_the_new_driver_and_executors(
    workers: list[WorkerInfo], fits: bool
) -> None:
    registry = FakeRegistry(FakeClient(workers))
    assert handover_fits(registry, SPEC) is fits  # type: ignore[arg-type]


@pytest.mark.parametrize(("executors", "fits"), [(2, True), (1, False), (0, False)])
def test_a_warm_handover_needs_room_for_the_executors_the_standby_lacks(
    executors: int, fits: bool
) -> None:
    registry = FakeRegistry(FakeClient([worker(2, 2), worker(2, 2)]))  # full cluster
    standby = Standby("fleet", "2", "tok", "driver-2", {"executors": executors})
    assert handover_fits(registry, SPEC, standby) is fits  # type: ignore[arg-type]
