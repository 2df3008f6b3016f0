"""Which of a hot standby's executors it keeps: none on the running driver's worker."""

from __future__ import annotations

from spark_jobs.runtime.placement import Placement, split_executors


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
