"""Capacity arithmetic: what the jobs need, what the workers offer, and what is missing.

Pure (no I/O): health (:mod:`streamops.health.capacity`) and admission
(:mod:`streamops.procedures.admission`) feed it values read from the master's ``/json/`` and
the jobs' specs.

- :class:`Need` — the cores and memory one job holds when it runs whole: its driver, and
  ``max_cores // executor_cores`` executors of ``executor_cores`` each (Spark's standalone
  master grants an executor only while the cores left under ``spark.cores.max`` hold a whole
  one); a ``standby: hot`` job twice, its standby with one executor more;
- :class:`Node` — one ALIVE worker: its cores and memory, and what is free of them now;
- :func:`spare_check` — N+1: whether the workers left after the loss of the largest still
  hold every job (first-fit decreasing, each driver and executor on one worker);
- :func:`app_waits` — each job's application as the master lists it: cores granted against
  the cores the spec wants (:class:`AppWait`), and :func:`wait_detail`, the sentence that
  names the cause and the way out.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from streamops.spec import JobSpec

FAILOVER_GOAL = 15.0
"""Seconds a job may be without its executors after a failover (the project's goal): a job
whose application waits for cores longer is down, and health fails."""

_MEMORY = re.compile(r"^(\d+)([kmgt]?)b?$")
_MB = {"k": 1 / 1024, "": 1 / (1024 * 1024), "m": 1, "g": 1024, "t": 1024 * 1024}


def memory_mb(text: str) -> int:
    """Megabytes of a Spark memory size (``1g`` → 1024, ``512m`` → 512)."""
    found = _MEMORY.match(text.strip().lower())
    if not found:
        raise ValueError(f"{text!r} is not a memory size like '512m' or '1g'")
    return max(1, int(int(found.group(1)) * _MB[found.group(2)]))


def _cores(n: int) -> str:
    return f"{n} core" if n == 1 else f"{n} cores"


@dataclass(frozen=True)
class Unit:
    """One JVM a job runs: a driver or an executor, placed whole on one worker."""

    job: str
    what: str  # "driver" | "executor" | "standby driver" | "standby executor"
    cores: int
    memory: int  # MB


@dataclass(frozen=True)
class Need:
    """What one job holds when it runs whole."""

    job: str
    driver_cores: int
    driver_memory: int  # MB
    executor_cores: int
    executor_memory: int  # MB
    max_cores: int
    hot_standby: bool = False

    @classmethod
    def of_spec(cls, spec: JobSpec) -> Need:
        res = spec.resources
        return cls(spec.name, res.driver_cores, memory_mb(res.driver_memory),
                   spec.executor_cores, memory_mb(res.executor_memory), res.max_cores,
                   spec.standby == "hot")  # fmt: skip

    @property
    def executors(self) -> int:
        """Executors the master grants the job (whole ones under ``spark.cores.max``)."""
        return self.max_cores // self.executor_cores

    def units(self) -> list[Unit]:
        out = [Unit(self.job, "driver", self.driver_cores, self.driver_memory)]
        out += [Unit(self.job, "executor", self.executor_cores, self.executor_memory)
                for _ in range(self.executors)]  # fmt: skip
        if self.hot_standby:  # its standby asks for one executor more (submission.py)
            out.append(Unit(self.job, "standby driver", self.driver_cores, self.driver_memory))
            out += [Unit(self.job, "standby executor", self.executor_cores,
                         self.executor_memory) for _ in range(self.executors + 1)]  # fmt: skip
        return out

    @property
    def cores(self) -> int:
        return sum(u.cores for u in self.units())


@dataclass(frozen=True)
class Node:
    """One ALIVE worker: ``name`` its node name (else ``host:port``)."""

    name: str
    cores: int
    memory: int  # MB
    cores_free: int = 0
    memory_free: int = 0


def nodes_of_master(master: Mapping[str, Any], names: Mapping[str, str] | None = None) -> list[
    Node
]:  # fmt: skip
    """The ALIVE workers of a master's ``/json/``; ``names``: worker id → node name."""
    out = []
    for w in master.get("workers") or []:
        if str(w.get("state")) != "ALIVE":
            continue
        cores, memory = int(w.get("cores", 0)), int(w.get("memory", 0))
        free = int(w.get("coresfree", cores - int(w.get("coresused", 0))))
        mem_free = int(w.get("memoryfree", memory - int(w.get("memoryused", 0))))
        name = (names or {}).get(str(w.get("id"))) or f"{w.get('host')}:{w.get('port')}"
        out.append(Node(name, cores, memory, free, mem_free))
    return out


# --- N+1 --------------------------------------------------------------------------------
@dataclass(frozen=True)
class SpareCheck:
    """Whether the workers left after losing ``lost`` hold every job (``unplaced`` empty)."""

    lost: Node | None  # the largest worker (None: no worker at all)
    cores_needed: int
    cores_left: int  # the cores of the workers left
    memory_needed: int
    memory_left: int
    unplaced: tuple[Unit, ...]
    needs: tuple[Need, ...]

    @property
    def ok(self) -> bool:
        return not self.unplaced

    def shortfall(self) -> str:
        """One sentence: what is needed, what is left after the loss, and what fits nowhere."""
        per_job = ", ".join(f"{n.job} {n.cores}" for n in self.needs) or "none"
        lost = (f"the loss of its largest worker {self.lost.name} ({_cores(self.lost.cores)})"
                if self.lost else "no worker at all")  # fmt: skip
        missing = "; ".join(sorted({f"{u.job}'s {_cores(u.cores)} {u.what}"
                                    for u in self.unplaced}))  # fmt: skip
        return (f"after {lost} the cluster has {_cores(self.cores_left)} and "
                f"{self.memory_left} MB left; the jobs need {_cores(self.cores_needed)} "
                f"({per_job}) and {self.memory_needed} MB"
                + (f"; no worker left holds {missing}" if missing else ""))  # fmt: skip

    def summary(self) -> str:
        if not self.ok:
            return f"no spare capacity (N+1): {self.shortfall()}"
        lost = self.lost.name if self.lost else "-"
        return (f"N+1 holds: after the loss of {lost} the jobs need "
                f"{_cores(self.cores_needed)} of the {_cores(self.cores_left)} left")


def _place(units: Sequence[Unit], nodes: Sequence[Node]) -> list[Unit]:
    """First-fit decreasing of ``units`` on the whole capacity of ``nodes``; the units that
    fit on no node."""
    free = [[n.cores, n.memory] for n in sorted(nodes, key=lambda n: (-n.cores, -n.memory))]
    unplaced = []
    for unit in sorted(units, key=lambda u: (-u.cores, -u.memory)):
        slot = next((f for f in free if f[0] >= unit.cores and f[1] >= unit.memory), None)
        if slot is None:
            unplaced.append(unit)
        else:
            slot[0] -= unit.cores
            slot[1] -= unit.memory
    return unplaced


def spare_check(nodes: Sequence[Node], needs: Iterable[Need]) -> SpareCheck:
    """N+1: do the ``nodes`` left after the loss of the largest (most cores, then memory)
    hold every job of ``needs`` whole?"""
    needs = tuple(needs)
    lost = max(nodes, key=lambda n: (n.cores, n.memory), default=None)
    left = [n for n in nodes if n is not lost]
    units = [u for n in needs for u in n.units()]
    return SpareCheck(
        lost, sum(u.cores for u in units), sum(n.cores for n in left),
        sum(u.memory for u in units), sum(n.memory for n in left),
        tuple(_place(units, left)), needs,
    )  # fmt: skip


# --- waiting applications ---------------------------------------------------------------
@dataclass(frozen=True)
class AppWait:
    """A job's application that holds fewer cores than its spec wants."""

    job: str
    app_id: str
    state: str  # the master's: WAITING, RUNNING
    granted: int
    wanted: int
    executor_cores: int
    executor_memory: int  # MB
    waited: float  # seconds since the application registered

    @property
    def down(self) -> bool:
        """No executor at all: the job runs no batch."""
        return self.granted == 0


def app_waits(master: Mapping[str, Any], needs: Mapping[str, Need], now: float) -> list[AppWait]:
    """Per job of ``needs`` with a live application: the one holding most cores (a hot
    standby's runs under the same name) when it holds fewer than the spec wants."""
    by_job: dict[str, dict[str, Any]] = {}
    for app in master.get("activeapps") or []:
        name = str(app.get("name"))
        best = by_job.get(name)
        if best is None or (int(app.get("cores", 0)), int(app.get("starttime", 0))) > (
            int(best.get("cores", 0)), int(best.get("starttime", 0))
        ):  # fmt: skip
            by_job[name] = app
    out = []
    for job, app in sorted(by_job.items()):
        need = needs.get(job)
        if need is None:
            continue
        granted, wanted = int(app.get("cores", 0)), need.executors * need.executor_cores
        if granted >= wanted:
            continue
        waited = max(0.0, now - int(app.get("starttime", 0)) / 1000.0)
        memory = int(app.get("memoryperexecutor") or need.executor_memory)
        out.append(AppWait(job, str(app.get("id")), str(app.get("state")), granted, wanted,
                           need.executor_cores, memory, waited))  # fmt: skip
    return out


def free_text(nodes: Sequence[Node]) -> str:
    """``1 core free on worker-2`` / ``free: 1 core (3072 MB) on worker-2, 0 cores on …``."""
    if not nodes:
        return "no worker is ALIVE"
    ranked = sorted(nodes, key=lambda n: (-n.cores_free, n.name))
    if len(ranked) == 1:
        n = ranked[0]
        return f"{_cores(n.cores_free)} ({n.memory_free} MB) free on {n.name}"
    parts = ", ".join(f"{_cores(n.cores_free)} ({n.memory_free} MB) on {n.name}" for n in ranked)
    return f"free: {parts}"


def wait_detail(wait: AppWait, nodes: Sequence[Node], add_worker: str) -> str:
    """The cause and the way out: ``fleet-pings waits for a 2-core executor (1024 MB): 0 of
    2 cores granted for 40 s; 1 core (3072 MB) free on worker-2; add a worker (`streamops
    scale --add worker-1`) or cancel a job``. ``add_worker``: the command that adds one."""
    fits = [n for n in nodes
            if n.cores_free >= wait.executor_cores and n.memory_free >= wait.executor_memory]
    if fits:  # the master has room now: it grants the executor at its next scheduling
        why = f"room for it on {', '.join(n.name for n in fits)} now"
    else:
        why = free_text(nodes)
    head = (f"{wait.job} waits for a {wait.executor_cores}-core executor "
            f"({wait.executor_memory} MB): {wait.granted} of {wait.wanted} cores granted"
            if wait.down else
            f"{wait.job} runs smaller: {wait.granted} of {wait.wanted} cores granted, it waits "
            f"for a {wait.executor_cores}-core executor ({wait.executor_memory} MB) more")
    since = f" for {wait.waited:.0f} s" if wait.down else ""
    return (f"{head}, application {wait.app_id} {wait.state}{since}; {why}; "
            f"add a worker (`{add_worker}`) or cancel a job (`streamops cancel <job>`)")
