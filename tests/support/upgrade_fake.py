"""A fake world for :mod:`streamops.procedures.upgrade_steps`: one operations port
(:class:`~streamops.world.operations.Operations`) whose job registry, savepoint store and
submitter are hand-written fakes that record what they were asked (``calls``); the intent
record, the control requests and the submissions file are real. Nothing is monkeypatched:
the steps are given ``cluster.ops``.

The fake old driver answers a savepoint request when asked to (``answer``; at once while
``auto_answer``): it publishes the savepoint and stops, or (handover) idles until the new
version runs.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from support.fake_savepoints import FakeSavepoints

from streamops.exceptions import JobError
from streamops.settings import PROJECT_ROOT, Settings
from streamops.spec import JobSpec, load_spec
from streamops.state.job_status import JobStatus, StageStatus
from streamops.state.layout import append_jsonl
from streamops.verdict import Observation
from streamops.world.operations import Operations
from streamops.world.port import SystemClock
from streamops.world.standby import Standby
from streamops_contract.state import control

JOB = "fleet-pings"
V1 = PROJECT_ROOT / "config" / "jobs" / "fleet-pings.yaml"
V2 = PROJECT_ROOT / "config" / "jobs" / "fleet-pings-v2.yaml"

STATELESS = {"stateful": False, "operators": []}
RUNNING_STAGES = {"vehicles": STATELESS}  # v1's, in the driver's status
NEW_STAGES = {"vehicles": STATELESS, "speed-5m": STATELESS}  # v2's: one stage more


@dataclass
class FakeCluster:
    settings: Settings
    old: JobSpec
    live: set[str] = field(default_factory=lambda: {"driver-old"})
    job_driver: str = "driver-old"  # the driver the job's status names
    savepoints: set[str] = field(default_factory=set)
    calls: list[str] = field(default_factory=list)
    free_for_standby: bool = True
    handover_fits: bool = True  # the cluster has the cores for the new version beside the old
    standby_error: str | None = None  # the warm standby fails to come up with this
    healthy: bool = True
    auto_answer: bool = True  # the old driver answers as soon as it is asked

    @property
    def ops(self) -> Operations:
        savepoints = FakeSavepoints(self.settings, self.savepoints, then=self._auto_answer)
        return Operations(self.settings, FakeRegistry(self), savepoints, FakeSubmitter(self),
                          SystemClock())  # fmt: skip

    def _auto_answer(self) -> None:
        if self.auto_answer:
            self.answer()

    # the old driver
    def answer(self, *, ok: bool = True) -> None:
        for request in control.pending_requests(self.settings.layout, JOB):
            handover = request.handover
            if ok:
                self.savepoints.add(str(request.name))
                if not handover:
                    self.live.discard("driver-old")
            control.write_result(self.settings.layout, JOB, request, ok=ok,
                                 message="saved" if ok else "failed",
                                 detail={"handover": handover})  # fmt: skip

    def submit(self, spec: JobSpec, driver: str, what: str) -> str:
        self.calls.append(f"{what} v{spec.version} as {driver}")
        append_jsonl(self.settings.layout.submissions_file(spec.name),
                     {"event": "submitted", "driver_id": driver, "at": time.time()})  # fmt: skip
        self.live.add(driver)
        return driver

    def count(self, prefix: str) -> int:
        return sum(call.startswith(prefix) for call in self.calls)


@dataclass
class FakeRegistry:
    cluster: FakeCluster

    def view(self, job: str) -> Any:
        live = self.cluster.job_driver in self.cluster.live
        return SimpleNamespace(is_live=live, driver_id=self.cluster.job_driver,
                               status=JobStatus(), state="RUNNING" if live else "FINISHED",
                               stages={s: StageStatus(descriptor=d)
                                       for s, d in RUNNING_STAGES.items()})  # fmt: skip

    def observe(self, job: str, since_driver: str | None = None) -> Observation:
        live = self.cluster.job_driver in self.cluster.live
        view = SimpleNamespace(name=job, version="2", driver_id=self.cluster.job_driver,
                               is_live=live, healthy=live and self.cluster.healthy,
                               ended=not live, state="RUNNING" if live else "FINISHED",
                               driver_state="RUNNING" if live else "FINISHED",
                               status=JobStatus(driver_id=self.cluster.job_driver), stages={})
        return Observation(view, since_driver, since_live=live)  # type: ignore[arg-type]

    def driver_live(self, driver: str) -> bool:
        return driver in self.cluster.live

    def current_spec(self, job: str) -> JobSpec:
        return self.cluster.old

    def wait_healthy(self, job: str, *, timeout: float, since_driver: str | None = None) -> Any:
        if not self.cluster.healthy:
            raise JobError(f"job {job} not healthy after {timeout:.0f}s")
        return self.view(job)

    def wait_driver_ended(self, job: str, driver: str | None, timeout: float) -> None:
        self.cluster.live.discard(str(driver))

    def failure_detail(self, view: Any, driver: str | None = None) -> str:
        return "it crashed on start"

    @property
    def client(self) -> Any:
        return SimpleNamespace(kill_submission=lambda d: self.cluster.calls.append(f"kill {d}"))


@dataclass
class FakeSubmitter:
    cluster: FakeCluster

    def describe_stages(self, spec: JobSpec) -> dict[str, dict[str, Any]]:
        return dict(NEW_STAGES)

    def wants_standby(self, spec: JobSpec, mode: str) -> bool:
        return mode == "warm" or (mode == "auto" and self.cluster.free_for_standby)

    def handover_fits(self, spec: JobSpec, standby: Standby | None) -> bool:
        return self.cluster.handover_fits

    def start_standby(self, spec: JobSpec, *, timeout: float,
                      new_stages: Iterable[str] = ()) -> Standby:  # fmt: skip
        if self.cluster.standby_error:
            raise JobError(self.cluster.standby_error)
        driver = self.cluster.submit(spec, "driver-standby", "standby")
        return Standby(spec.name, spec.version, "tok", driver, {"executors": 2})

    def released(self, ready: Standby) -> bool:
        return self._go(ready).is_file()

    def release_standby(self, ready: Standby, savepoint: str, stages: Iterable[str]) -> None:
        self.cluster.calls.append(f"release {ready.driver_id} from {savepoint}")
        self.cluster.job_driver = ready.driver_id
        go = self._go(ready)
        go.parent.mkdir(parents=True, exist_ok=True)
        go.write_text("{}")

    def abort_standby(self, ready: Standby) -> None:
        self.cluster.calls.append(f"abort {ready.driver_id}")

    def start_from_savepoint(self, spec: JobSpec, savepoint: str, stages: Iterable[str], *,
                             wait_healthy: float | None = None,
                             replacing: str | None = None) -> str:  # fmt: skip
        started = self.cluster.submit(spec, "driver-new", f"start from {savepoint}:")
        self.cluster.job_driver = started
        return started

    def restore_version(self, spec: JobSpec, savepoint: str, *,
                        stop: Iterable[str | None] = (), wait_healthy: float) -> str:  # fmt: skip
        self.cluster.calls.append(f"rollback to v{spec.version} from {savepoint}")
        return "driver-rolled-back"

    def submit(self, spec: JobSpec, **_: Any) -> str:
        return self.cluster.submit(spec, "driver-submitted", "submit")

    def _go(self, ready: Standby) -> Path:
        return self.cluster.settings.layout.standby_go_file(ready.job, ready.token)


def install(tmp_path: Path) -> FakeCluster:
    """The fake world of a state root under ``tmp_path``, v1 running as ``driver-old``."""
    return FakeCluster(Settings.from_env({}, state_root=str(tmp_path)), load_spec(V1))
