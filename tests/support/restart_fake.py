"""A fake world for :mod:`streamops.procedures.savepoint_restart` (the restart from a fresh
savepoint that the restart, the rebalance and the cluster restart run): one operations port
(``cluster.ops``) whose job registry (the cluster itself), savepoints, submitter and nodes are
hand-written fakes that record what they were asked (``calls``; the nodes' workers:
:mod:`support.nodes_fake`); the intent records, the control channel (request and answer files)
and the submissions file are real. Nothing is monkeypatched.

The fake driver acts as a real one does at its batch boundaries: each time the cluster is
looked at it answers the pending savepoint requests (publishing the savepoint), and a look
later its process has ended after a savepoint with cancel.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from support.fake_savepoints import FakeSavepoints
from support.nodes_fake import WorkerAgents

from streamops.cluster.releases import ReleaseStore
from streamops.exceptions import JobError, JobNotFound
from streamops.settings import PROJECT_ROOT, Settings
from streamops.spec import JobSpec, load_spec
from streamops.state.job_status import JobStatus
from streamops.state.layout import append_jsonl
from streamops.world.operations import Operations
from streamops.world.port import SystemClock
from streamops_contract.state import control

JOB = "fleet-pings"
V1 = PROJECT_ROOT / "config" / "jobs" / "fleet-pings.yaml"


@dataclass
class FakeCluster:
    settings: Settings
    spec: JobSpec
    driver: str | None = "driver-1"  # the job's live driver (None: not running)
    app: int = 1
    savepoints: set[str] = field(default_factory=set)
    calls: list[str] = field(default_factory=list)
    answering: bool = True  # the driver answers at its next look
    stopping: str | None = None  # the driver that answered a cancel: gone at the next look
    submitted: int = 0
    left: list[str] = field(default_factory=list)  # other drivers of the job (a relaunch)
    savepoint_error: str | None = None  # the driver's savepoint fails so; the job goes on
    workers: list[str] = field(default_factory=lambda: ["worker-1"])  # running (FakeNodes)

    # the driver, at a batch boundary
    def _boundary(self) -> None:
        if self.stopping is not None:
            self.calls.append(f"ended {self.stopping}")
            self.driver = self.stopping = None
        if not self.answering or self.driver is None:
            return
        for request in control.pending_requests(self.settings.layout, JOB):
            if self.savepoint_error is not None:  # as spark_jobs.runtime.control answers it
                self.calls.append(f"savepoint {request.name} failed")
                control.write_result(self.settings.layout, JOB, request, ok=False,
                                     message=self.savepoint_error)  # fmt: skip
                continue
            self.savepoints.add(str(request.name))
            self.calls.append(f"savepoint {request.name} cancel={request.cancel}")
            control.write_result(
                self.settings.layout,
                JOB,
                request,
                ok=True,
                message="saved",
                detail={"savepoint": request.name, "handover": False},
            )
            if request.cancel:
                self.stopping = self.driver

    # the job registry
    def view(self, job: str) -> Any:
        self._boundary()
        live = self.driver is not None
        return SimpleNamespace(name=job, is_live=live, driver_id=self.driver, stages={},
                               status=JobStatus(app_id=f"app-{self.app}") if live else JobStatus(),
                               state="RUNNING" if live else "FINISHED")  # fmt: skip

    def list(self) -> list[Any]:
        return [self.view(JOB)]

    def names(self) -> list[str]:
        return [JOB]

    def driver_live(self, driver: str) -> bool:
        self._boundary()
        return driver == self.driver

    def wait_healthy(self, job: str, *, timeout: float, since_driver: str | None = None) -> Any:
        self.calls.append(f"verify {since_driver}")
        if self.driver is None:
            raise JobError(f"job {job} is not running")
        return self.view(job)

    def drivers(self, job: str) -> list[Any]:
        self._boundary()
        return [SimpleNamespace(id=d) for d in [self.driver, *self.left] if d]

    def cancel(self, job: str) -> list[str]:
        killed = [d for d in [*self.left, self.driver] if d]
        self.calls.append(f"cancel {' '.join(killed)}")
        self.driver, self.left = None, []
        return killed

    # the submission
    def start(self, spec: JobSpec, savepoint: str, stages: Any, **_: Any) -> str:
        if self.driver is not None or self.left:
            raise JobError(f"job {spec.name} is already running")
        self.submitted += 1
        self.app += 1
        self.driver = f"driver-{self.app}"
        self.calls.append(f"submit v{spec.version} from {savepoint} as {self.driver}")
        append_jsonl(
            self.settings.layout.submissions_file(spec.name),
            {"event": "submitted", "driver_id": self.driver, "at": time.time()},
        )
        return self.driver

    def count(self, prefix: str) -> int:
        return sum(call.startswith(prefix) for call in self.calls)

    @property
    def ops(self) -> Operations:
        savepoints = FakeSavepoints(self.settings, self.savepoints, check=self._running)
        return Operations(self.settings, self, savepoints, FakeSubmitter(self), SystemClock(),
                          FakeNodes(self))  # fmt: skip

    def _running(self, job: str) -> None:
        view = self.view(job)
        if not view.is_live:
            raise JobNotFound(f"job {job} is not running (state {view.state})")

    # the rest of the registry
    @property
    def layout(self) -> Any:
        return self.settings.layout

    @property
    def client(self) -> Any:
        return SimpleNamespace(kill_submission=lambda d: self.calls.append(f"kill {d}"),
                               workers=lambda: [], active_apps=lambda: [])  # fmt: skip

    def current_spec(self, job: str) -> JobSpec:
        return self.spec

    def wait_driver_ended(self, job: str, driver: str | None, timeout: float) -> None:
        for _ in range(3):  # the driver ends at its next look after a cancel
            if not self.driver_live(str(driver)):
                return
        raise JobError(f"job {job}: driver {driver} still running")

    def failure_detail(self, view: Any, driver: str | None = None) -> str:
        return "it crashed on start"

    def kill_driver(self, job: str, driver: str) -> None:
        self.calls.append(f"kill {driver}")

    def clear_orphans(self, job: str, *, keep: Any = frozenset()) -> list[str]:
        return []


@dataclass
class FakeSubmitter:
    cluster: FakeCluster

    def start_from_savepoint(self, spec: JobSpec, savepoint: str, stages: Any,
                             **kwargs: Any) -> str:  # fmt: skip
        return self.cluster.start(spec, savepoint, stages, **kwargs)

    def submit(self, spec: JobSpec, **_: Any) -> str:
        return self.cluster.start(spec, "its checkpoints", ())


@dataclass
class FakeNodes(WorkerAgents):
    """The cluster's daemons: stopped and started (recorded); its workers (the cluster's
    ``workers``, one unless set) started and decommissioned (recorded)."""

    cluster: FakeCluster

    @property  # type: ignore[override]
    def running(self) -> list[str]:
        return self.cluster.workers

    @property  # type: ignore[override]
    def calls(self) -> list[str]:
        return self.cluster.calls

    def stop_all(self) -> None:
        self.cluster.calls.append("stop cluster")

    def start_all(self, workers: list[str]) -> None:
        self.cluster.calls.append("start cluster")

    def switch_release(self, release: str) -> None:
        ReleaseStore(self.cluster.settings).switch(release)


def install(settings: Settings) -> FakeCluster:
    """The fake world of ``settings``' state root, v1 running as ``driver-1``."""
    return FakeCluster(settings, load_spec(V1))


def settings_at(tmp_path: Path) -> Settings:
    return Settings.from_env({}, state_root=str(tmp_path))


def as_dag_task(monkeypatch: Any, cluster: FakeCluster, run: Any) -> FakeCluster:
    """``cluster`` as the world of a task of DAG run ``run`` (its ``dag_id`` and ``run_id``):
    the task's context, operations port and settings."""
    monkeypatch.setattr("airflow.sdk.get_current_context", lambda: {"ti": run})
    monkeypatch.setattr("streamops_airflow.hooks.ops_operations", lambda *_: cluster.ops)
    monkeypatch.setattr("streamops_airflow.hooks.ops_settings", lambda *_: cluster.settings)
    return cluster
