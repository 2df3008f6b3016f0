"""A fake cluster at the edge of :mod:`streamops.procedures.upgrade_steps`: the job registry, the
standby,
submit and restore calls are replaced by hand-written fakes that record what they were asked
(``calls``); the intent record, the control requests and the submissions file are real.

The fake old driver answers a savepoint request when asked to (``answer``): it publishes the
savepoint and stops, or (handover) idles until the new version runs.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from streamops.exceptions import JobError, SavepointNotFound
from streamops.planner import StageAction
from streamops.procedures import intents, savepoint_taking, upgrade_steps
from streamops.procedures import standby as standbys
from streamops.procedures.standby import Standby
from streamops.settings import PROJECT_ROOT, Settings
from streamops.spec import JobSpec, load_spec
from streamops.state import control
from streamops.state.layout import append_jsonl
from streamops.verdict import Observation

JOB = "fleet-pings"
V1 = PROJECT_ROOT / "config" / "jobs" / "fleet-pings.yaml"
V2 = PROJECT_ROOT / "config" / "jobs" / "fleet-pings-v2.yaml"


@dataclass
class FakeCluster:
    settings: Settings
    old: JobSpec
    live: set[str] = field(default_factory=lambda: {"driver-old"})
    job_driver: str = "driver-old"  # the driver the job's status names
    savepoints: set[str] = field(default_factory=set)
    calls: list[str] = field(default_factory=list)
    free_for_standby: bool = True
    healthy: bool = True
    auto_answer: bool = True  # the old driver answers as soon as it is asked

    # the job registry
    def view(self, job: str) -> Any:
        live = self.job_driver in self.live
        return SimpleNamespace(is_live=live, driver_id=self.job_driver, status={},
                               state="RUNNING" if live else "FINISHED", stages={})  # fmt: skip

    def observe(self, job: str, since_driver: str | None = None) -> Observation:
        live = self.job_driver in self.live
        view = SimpleNamespace(name=job, version="2", driver_id=self.job_driver, is_live=live,
                               healthy=live and self.healthy, ended=not live,
                               state="RUNNING" if live else "FINISHED",
                               driver_state="RUNNING" if live else "FINISHED",
                               status={"driver_id": self.job_driver}, stages={})  # fmt: skip
        return Observation(view, since_driver, since_live=live)  # type: ignore[arg-type]

    def driver_live(self, driver: str) -> bool:
        return driver in self.live

    def wait_healthy(self, job: str, *, timeout: float, since_driver: str | None = None) -> Any:
        if not self.healthy:
            raise JobError(f"job {job} not healthy after {timeout:.0f}s")
        return self.view(job)

    def failure_detail(self, view: Any, driver: str | None = None) -> str:
        return "it crashed on start"

    @property
    def client(self) -> Any:
        return SimpleNamespace(kill_submission=lambda d: self.calls.append(f"kill {d}"))

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

    def count(self, prefix: str) -> int:
        return sum(call.startswith(prefix) for call in self.calls)


def install(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> FakeCluster:
    settings = Settings.from_env({}, state_root=str(tmp_path))
    cluster = FakeCluster(settings, load_spec(V1))
    registry = lambda *_: cluster  # noqa: E731
    for module in (upgrade_steps, savepoint_taking, intents):
        monkeypatch.setattr(module, "JobRegistry", registry)
    monkeypatch.setattr(upgrade_steps, "current_spec", lambda *_: cluster.old)

    def plan_upgrade(settings: Settings, job: str, new: JobSpec, **_: Any) -> Any:
        stages = [SimpleNamespace(stage="vehicles", action=StageAction.RESTORE),
                  SimpleNamespace(stage="speed-5m", action=StageAction.NEW)]  # fmt: skip
        return SimpleNamespace(allowed=True, refusal=None, stages=stages,
                               render=lambda: f"plan v{cluster.old.version} -> v{new.version}")

    def get_savepoint(layout: Any, name: str, job: str | None = None) -> Any:
        if name not in cluster.savepoints:
            raise SavepointNotFound(f"no savepoint {name}")
        return SimpleNamespace(stages={"vehicles": 1})

    def submit(spec: JobSpec, driver: str, what: str) -> str:
        cluster.calls.append(f"{what} v{spec.version} as {driver}")
        append_jsonl(settings.layout.submissions_file(spec.name),
                     {"event": "submitted", "driver_id": driver, "at": time.time()})  # fmt: skip
        cluster.live.add(driver)
        return driver

    def start_standby(spec: JobSpec, settings: Settings, **_: Any) -> Standby:
        return Standby(spec.name, spec.version, "tok", submit(spec, "driver-standby", "standby"),
                       {"executors": 2})  # fmt: skip

    def release_standby(settings: Settings, ready: Standby, savepoint: str, stages: Any) -> None:
        cluster.calls.append(f"release {ready.driver_id} from {savepoint}")
        cluster.job_driver = ready.driver_id
        go = settings.layout.standby_go_file(ready.job, ready.token)
        go.parent.mkdir(parents=True, exist_ok=True)
        go.write_text("{}")

    def start_from_savepoint(spec: JobSpec, settings: Settings, savepoint: str, stages: Any,
                             **_: Any) -> str:  # fmt: skip
        cluster.job_driver = submit(spec, "driver-new", f"start from {savepoint}:")
        return cluster.job_driver

    def restore_version(settings: Settings, spec: JobSpec, savepoint: str, **_: Any) -> str:
        cluster.calls.append(f"rollback to v{spec.version} from {savepoint}")
        return "driver-rolled-back"

    def request_savepoint(*args: Any, **kwargs: Any) -> str:
        request = send(*args, **kwargs)
        if cluster.auto_answer:
            cluster.answer()
        return request

    send = savepoint_taking.request_savepoint
    monkeypatch.setattr(savepoint_taking, "request_savepoint", request_savepoint)
    monkeypatch.setattr(upgrade_steps, "plan_upgrade", plan_upgrade)
    monkeypatch.setattr(upgrade_steps, "get_savepoint", get_savepoint)
    monkeypatch.setattr(savepoint_taking.catalogue, "get_savepoint", get_savepoint)
    monkeypatch.setattr(upgrade_steps, "start_from_savepoint", start_from_savepoint)
    monkeypatch.setattr(upgrade_steps, "restore_version", restore_version)
    monkeypatch.setattr(savepoint_taking, "wait_driver_ended",
                        lambda settings, job, driver, timeout=0: cluster.live.discard(driver))
    monkeypatch.setattr(standbys, "wants_standby",
                        lambda registry, spec, mode: mode == "warm" or (
                            mode == "auto" and cluster.free_for_standby))  # fmt: skip
    monkeypatch.setattr(standbys, "handover_fits", lambda *_: True)
    monkeypatch.setattr(standbys, "start_standby", start_standby)
    monkeypatch.setattr(standbys, "release_standby", release_standby)
    monkeypatch.setattr(standbys, "abort_standby",
                        lambda settings, ready: cluster.calls.append(f"abort {ready.driver_id}"))
    return cluster
