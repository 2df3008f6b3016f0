"""The driver's watch of its executors (``spark_jobs.runtime.supervision.ExecutorWatch``): a
driver that lost every executor and was granted none for 60 s fails (its relaunch registers a
new application); one never granted any waits (health names what it waits for)."""

from __future__ import annotations

import pytest

from spark_jobs.runtime.errors import JobFailed
from spark_jobs.runtime.supervision import EXECUTOR_CHECK_S, NO_EXECUTOR_S, ExecutorWatch


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _run(counts: list[int], clock: _Clock, watch: ExecutorWatch) -> None:
    for count in counts:
        watch.count = lambda c=count: c  # type: ignore[misc]
        watch.check()
        clock.now += EXECUTOR_CHECK_S


def test_a_driver_that_lost_its_executors_fails_after_the_bound() -> None:
    clock = _Clock()
    watch = ExecutorWatch("fleet", lambda: 1, clock=clock)
    steps = int(NO_EXECUTOR_S / EXECUTOR_CHECK_S)
    _run([1, 1] + [0] * steps, clock, watch)  # 0 for just under the bound: still waiting
    with pytest.raises(JobFailed, match="no executor for 60s after it had some"):
        _run([0], clock, watch)


def test_an_executor_granted_again_resets_the_watch() -> None:
    clock = _Clock()
    watch = ExecutorWatch("fleet", lambda: 1, clock=clock)
    steps = int(NO_EXECUTOR_S / EXECUTOR_CHECK_S)
    _run([1] + [0] * (steps - 1) + [1] + [0] * (steps - 1), clock, watch)
    assert watch.none_since is not None and watch.had


def test_a_driver_never_granted_an_executor_waits() -> None:
    clock = _Clock()
    watch = ExecutorWatch("capacity-wait", lambda: 0, clock=clock)
    _run([0] * 100, clock, watch)
    assert not watch.had and watch.none_since is None


def test_the_count_is_read_once_per_period() -> None:
    clock, asked = _Clock(), []
    watch = ExecutorWatch("fleet", lambda: asked.append(1) or 1, clock=clock)
    for _ in range(50):
        watch.check()
        clock.now += 0.2  # the supervision loop's poll
    assert len(asked) == 2  # at 0 s and 5 s of the 10 s
