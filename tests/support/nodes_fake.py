"""Fake worker agents: the rolling scale's part of a fake operations port's ``nodes``
(:class:`streamops.world.operations.Nodes`). Workers start and stop at once, the master
lists exactly the running ones; what was asked is recorded (``calls``)."""

from __future__ import annotations

from dataclasses import dataclass, field

from streamops.exceptions import ClusterError
from streamops.timeouts import MASTER_TIMEOUT
from streamops.world.operations import ScaleResult


class WorkerAgents:
    """The workers of a fake ``Nodes``. The class holds ``running`` (the running workers, in
    order, changed in place) and ``calls`` (``start worker-3``, ``decommission worker-2``,
    ``master lists 3 ALIVE``); ``agents`` are the worker nodes with an agent, ``failure``
    makes every change fail so (a :class:`ClusterError`)."""

    running: list[str]
    calls: list[str]
    agents: tuple[str, ...] = ("worker-1", "worker-2", "worker-3", "worker-4")
    failure: str | None = None

    def running_workers(self) -> list[str]:
        return list(self.running)

    def add_worker(self, name: str) -> ScaleResult:
        if name in self.running:
            return ScaleResult((), (), tuple(self.running))
        self._change(f"start {name}")
        self.running.append(name)
        return ScaleResult((name,), (), tuple(self.running))

    def remove_worker(self, name: str) -> ScaleResult:
        if name not in self.running:
            raise ClusterError(f"worker {name} is not running; nothing to remove")
        self._change(f"decommission {name}")
        self.running.remove(name)
        return ScaleResult((), (name,), tuple(self.running))

    def scale_to(self, workers: int) -> ScaleResult:
        """Idle agents' workers started in order, or the last running ones decommissioned."""
        idle = [n for n in self.agents if n not in self.running]
        if workers - len(self.running) > len(idle):
            raise ClusterError(f"cannot scale to {workers} workers: {len(self.agents)} agents")
        started = [n for n in idle[: max(workers - len(self.running), 0)]
                   if self.add_worker(n).started]  # fmt: skip
        removed = [n for n in self.running[workers:][::-1] if self.remove_worker(n).removed]
        return ScaleResult(tuple(started), tuple(removed), tuple(self.running))

    def wait_alive_count(self, count: int, timeout: float = MASTER_TIMEOUT) -> None:
        self.calls.append(f"master lists {count} ALIVE")
        if len(self.running) != count:
            raise ClusterError(f"the master lists {len(self.running)} ALIVE workers, not "
                               f"{count}, after {timeout:.0f}s")  # fmt: skip

    def _change(self, what: str) -> None:
        if self.failure is not None:
            raise ClusterError(self.failure)
        self.calls.append(what)


@dataclass
class FakeWorkers(WorkerAgents):
    """Just the workers: the ``nodes`` of a port that only scales (two running)."""

    running: list[str] = field(default_factory=lambda: ["worker-1", "worker-2"])
    calls: list[str] = field(default_factory=list)
    failure: str | None = None
