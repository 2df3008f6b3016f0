"""Which of a hot standby's executors it keeps: none on the running driver's worker."""

from __future__ import annotations

from spark_jobs.runtime.hot_standby import move_reason
from spark_jobs.runtime.placement import MAX_MOVES, Placement, split_executors
from streamops.cluster.client import WorkerInfo
from streamops.spec import spec_from_dict


def test_executors_on_the_running_drivers_worker_are_released() -> None:
    by_worker = {"w-a": ["0", "3"], "w-b": ["1"], "w-c": ["2"]}
    assert split_executors(by_worker, "w-a", keep=2) == (["1", "2"], ["0", "3"], [])


def test_the_spare_is_released_and_the_kept_ones_spread() -> None:
    by_worker = {"w-b": ["1", "4"], "w-c": ["2"]}
    assert split_executors(by_worker, "w-a", keep=2) == (["1", "2"], [], ["4"])


def test_a_standby_with_too_few_apart_keeps_what_it_has() -> None:
    by_worker = {"w-a": ["0", "2"], "w-b": ["1"]}
    assert split_executors(by_worker, "w-a", keep=2) == (["1"], ["0", "2"], [])
    assert split_executors(by_worker, None, keep=2) == (["0", "1"], [], ["2"])


def test_beside_needs_a_known_worker() -> None:
    assert Placement("w-a", "w-a").beside
    assert not Placement("w-a", "w-b").beside
    assert not Placement("", "").beside
    assert not Placement(None, "w-a").beside


class Master:
    """The master's list of workers (``w0``, ``w1``, ...), each with its free cores: the edge
    of these tests."""

    def __init__(self, *free: int) -> None:
        self.listed = [
            WorkerInfo(id=f"w{i}", host="127.0.0.1", port=1, webuiaddress="", state="ALIVE",
                       cores=4, coresused=4 - n, memory=4096, memoryused=0, lastheartbeat=0)
            for i, n in enumerate(free)
        ]  # fmt: skip

    def workers(self) -> list[WorkerInfo]:
        return self.listed


def reason(master: Master, where: Placement, as_standby: bool = True, moves: int = 0) -> str | None:
    spec = spec_from_dict({"name": "j", "version": "1", "entrypoint": "spark_jobs.fleet_pings",
                           "standby": "hot"})  # fmt: skip
    return move_reason(master, spec, where, as_standby, moves)  # type: ignore[arg-type]


def test_a_standby_beside_the_driver_moves_while_another_worker_has_room() -> None:
    beside = Placement("w0", "w0")
    assert reason(Master(2, 1), beside) == "it runs on the running driver's worker w0"
    assert reason(Master(2, 0), beside) is None  # nowhere else to go: it stays
    assert reason(Master(2, 1), beside, moves=MAX_MOVES) is None  # moved enough: it stays
    assert reason(Master(2, 1), Placement("w0", "w1")) is None


def test_a_relaunched_driver_gives_its_place_to_a_standby_with_a_spare() -> None:
    assert reason(Master(2, 1), Placement("w0", "w1"), as_standby=False) == (
        "a relaunched driver stands by without a spare executor"
    )
