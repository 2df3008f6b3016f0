"""A reconcile pass on a real state root with the observation and the actions faked: the
jobs the fake cluster runs, the actions called (job, action, owner), and what an action
should raise instead (``behaviour[job]``: an exception raised by every call, or a list of
them, one per call, ``None`` for a call that works)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from streamops.declarative import act, inflight, reconcile
from streamops.declarative.inflight import InFlight
from streamops.declarative.observe import JobSeen, ReconcileView
from streamops.settings import Settings
from streamops.state.declarative.resources import Deployment
from streamops.state.declarative.store import Store


class Killed(BaseException):
    """The process dies here (nothing of the pass runs after it)."""


def dep(name: str, **kw: Any) -> Deployment:
    spec = {"name": name, "version": "1", "entrypoint": "spark_jobs.transactions", **kw.pop(
        "spec", {})}  # fmt: skip
    return Deployment.model_validate({"name": name, "spec": spec, **kw})


def make_world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    settings = Settings.from_env({}, state_root=str(tmp_path))
    jobs: dict[str, JobSeen] = {}
    calls: list[tuple[str, str, str]] = []  # (job, action, owner)
    details: list[dict[str, Any]] = []  # each call's record.detail
    behaviour: dict[str, Any] = {}

    def fake_observe(settings: Settings, names: list[str], **_: Any) -> ReconcileView:
        return ReconcileView(0.0, cluster_up=True, jobs={n: jobs.get(n, JobSeen()) for n in names})

    def fake_act(settings: Settings, record: InFlight, save: Any, d: Deployment) -> act.Outcome:
        calls.append((d.name, record.action, record.owner))
        details.append(dict(record.detail))
        assert inflight.load(Store(settings.layout), "JobDeployment", d.name) is not None
        how = behaviour.get(d.name)
        if isinstance(how, list):
            how = how.pop(0) if how else None
        if how is not None:
            raise how
        if record.action == "suspend":
            name = record.detail["savepoint"]
            jobs[d.name] = JobSeen(
                state="STOPPED",
                ended=True,
                submitted_at=1.0,
                stopped_at=2.0,
                running_spec=record.detail["spec_ran"],
                stopped_by=name,
            )
            return act.Outcome("suspended", savepoint=name, savepoint_kind="suspend")
        spec = record.detail.get("spec") or {}
        jobs[d.name] = JobSeen(live=True, healthy=True, state="RUNNING", driver="driver-x",
                               version=spec.get("version"), running_spec=spec,
                               submitted_at=1.0)  # fmt: skip
        return act.Outcome("ok", driver="driver-x")

    monkeypatch.setattr(reconcile, "observe", fake_observe)
    monkeypatch.setattr(act, "act_deployment", fake_act)
    return {"settings": settings, "store": Store(settings.layout), "jobs": jobs, "calls": calls,
            "details": details, "behaviour": behaviour}  # fmt: skip
