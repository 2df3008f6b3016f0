"""How many executors a warm standby can get beside the running version, whether its driver
fits now (the upgrade DAG's ``auto``), and whether an upgrade's old driver may idle (hand over)
beside the new version."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import pytest

from streamops.cluster.client import WorkerInfo
from streamops.spec import spec_from_dict
from streamops.world.standby import (
    Standby,
    handover_fits,
    standby_executors,
    standby_fits,
    wants_standby,
)


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


TWO_CORE = spec_from_dict({
    "name": "fleet", "version": "2", "entrypoint": "spark_jobs.fleet_pings_v2",
    "resources": {"driver_cores": 1, "executor_cores": 2, "max_cores": 2},
})  # fmt: skip


@pytest.mark.parametrize(
    ("workers", "expected", "fits"),
    [
        ([worker(3, 3), worker(3, 0)], 1, True),  # driver and executor fit on the free one
        ([worker(3, 2), worker(3, 1)], 0, False),  # 3 free cores, but no 2 on one worker
        ([worker(3, 1), worker(3, 3)], 0, False),  # the driver may take one of the two
        ([worker(4, 1), worker(4, 4)], 1, True),
        ([worker(2, 0), worker(2, 2, state="DEAD")], 0, False),
    ],
)
def test_an_executor_needs_its_cores_on_one_worker(
    workers: list[WorkerInfo], expected: int, fits: bool
) -> None:
    registry = FakeRegistry(FakeClient(workers))
    assert standby_executors(registry, TWO_CORE) == expected  # type: ignore[arg-type]
    assert handover_fits(registry, TWO_CORE) is fits  # type: ignore[arg-type]


HOT = TWO_CORE.model_copy(update={"standby": "hot"})  # its executors have one core each


@pytest.mark.parametrize(
    ("workers", "expected", "fits"),
    [
        ([worker(3, 2), worker(3, 1)], 2, True),  # no 2 cores on one worker, 1 on each
        ([worker(3, 3), worker(3, 1)], 1, False),  # the driver takes one of the two
        ([worker(2, 2), worker(2, 2)], 0, False),
    ],
)
def test_a_hot_jobs_executors_are_counted_at_one_core(
    workers: list[WorkerInfo], expected: int, fits: bool
) -> None:
    registry = FakeRegistry(FakeClient(workers))
    assert HOT.executor_cores == 1
    assert standby_executors(registry, HOT) == expected  # type: ignore[arg-type]
    assert handover_fits(registry, HOT) is fits  # type: ignore[arg-type]


@pytest.mark.parametrize(("executors", "fits"), [(2, True), (1, False), (0, False)])
def test_a_warm_handover_needs_room_for_the_executors_the_standby_lacks(
    executors: int, fits: bool
) -> None:
    registry = FakeRegistry(FakeClient([worker(2, 2), worker(2, 2)]))  # full cluster
    standby = Standby("fleet", "2", "tok", "driver-2", {"executors": executors})
    assert handover_fits(registry, SPEC, standby) is fits  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("workers", "fits"),
    [
        ([worker(2, 2), worker(2, 1)], True),  # the test cluster: v1 holds 3 of 4 cores
        ([worker(2, 2), worker(2, 2)], False),  # full: the standby would wait for v1's cores
        ([worker(2, 1), worker(2, 2, state="DEAD")], True),
        ([worker(2, 2), worker(4, 0, state="DEAD")], False),  # a dead worker offers nothing
    ],
)
def test_a_standby_driver_needs_a_free_core_on_one_worker(
    workers: list[WorkerInfo], fits: bool
) -> None:
    registry = FakeRegistry(FakeClient(workers))
    assert standby_fits(registry, SPEC) is fits  # type: ignore[arg-type]


def test_a_standby_crosses_task_boundaries_as_compact_json() -> None:
    ready = {"executors": 1, "app_id": "app-1", "warm_up_s": 4.2, "stages": {"vehicles": {}}}
    standby = Standby("fleet", "2", "tok", "driver-2", ready)
    back = Standby.from_dict(json.loads(json.dumps(standby.to_dict())))
    assert back.driver_id == "driver-2" and back.token == "tok" and back.job == "fleet"
    assert back.ready == {"executors": 1, "app_id": "app-1", "warm_up_s": 4.2}  # no stages


@pytest.mark.parametrize(
    ("mode", "workers", "warm"),
    [
        ("auto", [worker(2, 2), worker(2, 1)], True),
        ("auto", [worker(2, 2), worker(2, 2)], False),
        ("warm", [worker(2, 2), worker(2, 2)], True),  # asked for: it waits for a core
        ("cold", [worker(4, 0), worker(4, 0)], False),
    ],
)
def test_an_upgrade_starts_a_standby_by_its_mode(
    mode: str, workers: list[WorkerInfo], warm: bool
) -> None:
    registry = FakeRegistry(FakeClient(workers))
    assert wants_standby(registry, SPEC, mode) is warm  # type: ignore[arg-type]


def test_the_upgrade_verb_takes_a_standby_mode_and_warm_as_its_shorthand() -> None:
    import argparse

    from streamops.cli import upgrade_cmds

    parser = argparse.ArgumentParser(prog="streamops")
    upgrade_cmds.register(parser.add_subparsers(dest="command", required=True))
    assert parser.parse_args(["upgrade", "job", "v2.yaml"]).standby == "auto"
    assert parser.parse_args(["upgrade", "job", "v2.yaml", "--warm"]).standby == "warm"
    assert parser.parse_args(["upgrade", "job", "v2.yaml", "--standby", "cold"]).standby == "cold"
    with pytest.raises(SystemExit):
        parser.parse_args(["upgrade", "job", "v2.yaml", "--standby", "hot"])
