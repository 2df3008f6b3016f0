"""The decision table: every desired/observed pair → its one next action (pure, no I/O)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from streamops.declarative.decide import (
    MAX_FAILURES,
    ActionKind,
    DeploymentFacts,
    RequestFacts,
    decide_deployment,
    decide_request,
)
from streamops.declarative.inflight import InFlight
from streamops.declarative.observe import JobSeen, SavepointSeen
from streamops.state.declarative.resources import Deployment, SavepointRequest
from streamops.state.declarative.status import (
    Blocked,
    Cancelled,
    DeploymentStatus,
    FailedAction,
    RequestStatus,
    SavepointRecord,
    Suspended,
)

NOW = 1_000_000.0
SPEC = {"name": "tx", "version": "1", "entrypoint": "spark_jobs.transactions"}


def dep(**kw: Any) -> Deployment:
    spec = {**SPEC, **kw.pop("spec", {})}
    return Deployment.model_validate({"name": "tx", "spec": spec, **kw})


def spec_of(d: Deployment) -> dict[str, Any]:
    return d.effective_spec.model_dump(mode="json")


V1, V2 = dep(), dep(spec={"version": "2"})
RUNNING = JobSeen(
    live=True,
    healthy=True,
    state="RUNNING",
    driver="driver-1",
    version="1",
    running_spec=spec_of(V1),
    submitted_at=NOW - 100,
)
DEAD = JobSeen(
    live=False, state="FAILED", ended=True, running_spec=spec_of(V1), submitted_at=NOW - 100
)
NEVER = JobSeen()
STOPPED_BY_SP = replace(DEAD, state="STOPPED", stopped_by="tx-sp", stopped_at=NOW - 50)


def facts(d: Deployment = V1, job: JobSeen = RUNNING, **kw: Any) -> DeploymentFacts:
    gen = kw.pop("generation", 1)
    return DeploymentFacts(
        deployment=d,
        generation=gen,
        status=kw.pop("status", DeploymentStatus(restart_nonce=0)),
        job=job,
        now=NOW,
        **kw,
    )


def inflight(action: str = "upgrade") -> InFlight:
    return InFlight("JobDeployment", "tx", action, 1, started_at=NOW - 5)


SUSPENDED_SP = DeploymentStatus(
    suspended=Suspended(
        savepoint="tx-suspend-1", cause="state: suspended", at=NOW - 20, spec=spec_of(V1)
    ),
    restart_nonce=0,
)
CANCELLED_G1 = DeploymentStatus(
    cancelled=Cancelled(request="tx-v1-final", savepoint="tx-v1-final", generation=1, at=NOW - 30),
    restart_nonce=0,
)
BLOCKED_G2 = DeploymentStatus(
    blocked=Blocked(generation=2, plan="verdict: REFUSED"), restart_nonce=0
)
UPGRADE_FAILED_G2 = DeploymentStatus(
    failed=FailedAction(generation=2, action="upgrade", message="rolled back", at=NOW - 5),
    restart_nonce=0,
)
RESTART_FAILED = DeploymentStatus(
    failed=FailedAction(
        generation=1,
        action="restart-last-checkpoint",
        message="FAILED again",
        at=NOW - 5,
        count=MAX_FAILURES,
    ),
    restart_nonce=0,
)

CASES = [
    # (id, facts, action, phase shown or "")
    (
        "in flight → continue it first",
        facts(V1, RUNNING, inflight=inflight("deploy")),
        ActionKind.CONTINUE,
        "",
    ),
    (
        "in flight even when suspended now",
        facts(dep(state="suspended"), RUNNING, inflight=inflight("upgrade")),
        ActionKind.CONTINUE,
        "",
    ),
    ("master down → wait", facts(V1, NEVER, cluster_up=False), ActionKind.WAIT, ""),
    (
        "a request with cancel in flight → wait",
        facts(V1, RUNNING, request_in_flight="tx-sp"),
        ActionKind.WAIT,
        "",
    ),
    ("running, never submitted → deploy", facts(V1, NEVER), ActionKind.DEPLOY, ""),
    (
        "running, never submitted, initial savepoint → deploy from it",
        facts(dep(initial_savepoint="tx-sp"), NEVER),
        ActionKind.DEPLOY,
        "",
    ),
    ("running as desired → nothing", facts(V1, RUNNING), ActionKind.NONE, "Running"),
    (
        "starting, not healthy yet → nothing",
        facts(V1, replace(RUNNING, healthy=False)),
        ActionKind.NONE,
        "Running",
    ),
    ("new version → upgrade", facts(V2, RUNNING, generation=2), ActionKind.UPGRADE, ""),
    (
        "new version, plan refused this generation → nothing",
        facts(V2, RUNNING, generation=2, status=BLOCKED_G2),
        ActionKind.NONE,
        "Running",
    ),
    (
        "plan refused an older generation, applied again → upgrade",
        facts(V2, RUNNING, generation=3, status=BLOCKED_G2),
        ActionKind.UPGRADE,
        "",
    ),
    (
        "upgrade blocked, suspend applied → suspend",
        facts(
            dep(state="suspended", spec={"version": "2"}), RUNNING, generation=2, status=BLOCKED_G2
        ),
        ActionKind.SUSPEND,
        "",
    ),
    (
        "upgrade failed this generation → nothing (no loop)",
        facts(V2, RUNNING, generation=2, status=UPGRADE_FAILED_G2),
        ActionKind.NONE,
        "Running",
    ),
    (
        "upgrade failed, suspend applied → suspend",
        facts(
            dep(state="suspended", spec={"version": "2"}),
            RUNNING,
            generation=3,
            status=UPGRADE_FAILED_G2,
        ),
        ActionKind.SUSPEND,
        "",
    ),
    (
        "upgrade failed, applied again → upgrade",
        facts(V2, RUNNING, generation=3, status=UPGRADE_FAILED_G2),
        ActionKind.UPGRADE,
        "",
    ),
    (
        "hot standby asked → the effective spec differs → upgrade",
        facts(dep(upgrade={"standby": "hot"}), RUNNING, generation=2),
        ActionKind.UPGRADE,
        "",
    ),
    (
        "restart nonce changed → restart from a savepoint",
        facts(dep(restart_nonce=1), RUNNING, generation=2),
        ActionKind.RESTART_SAVEPOINT,
        "",
    ),
    (
        "nonce unknown (adopted job) → nothing",
        facts(dep(restart_nonce=1), RUNNING, status=DeploymentStatus()),
        ActionKind.NONE,
        "Running",
    ),
    (
        "suspended, running → suspend",
        facts(dep(state="suspended"), RUNNING),
        ActionKind.SUSPEND,
        "",
    ),
    (
        "suspended, not running → nothing",
        facts(dep(state="suspended"), DEAD),
        ActionKind.NONE,
        "Suspended",
    ),
    (
        "resumed → deploy from the suspend's savepoint",
        facts(
            V1,
            STOPPED_BY_SP.__class__(**{**STOPPED_BY_SP.__dict__, "stopped_by": "tx-suspend-1"}),
            status=SUSPENDED_SP,
        ),
        ActionKind.DEPLOY,
        "",
    ),
    (
        "cancelled by a request, same generation → nothing",
        facts(V1, STOPPED_BY_SP, status=CANCELLED_G1),
        ActionKind.NONE,
        "Cancelled",
    ),
    (
        "cancelled, v2 applied from the request's savepoint → deploy",
        facts(
            dep(spec={"version": "2"}, initial_savepoint="tx-v1-final"),
            STOPPED_BY_SP,
            generation=2,
            status=CANCELLED_G1,
        ),
        ActionKind.DEPLOY,
        "",
    ),
    (
        "stopped by someone's savepoint with cancel → nothing, recorded",
        facts(V1, STOPPED_BY_SP),
        ActionKind.NONE,
        "Cancelled",
    ),
    (
        "died, not relaunched → restart from the last checkpoint",
        facts(V1, DEAD),
        ActionKind.RESTART_CHECKPOINT,
        "",
    ),
    (
        "died, restart failed too often → nothing (Failed)",
        facts(V1, DEAD, status=RESTART_FAILED),
        ActionKind.NONE,
        "Failed",
    ),
    (
        "deleted, running → stop it with a savepoint",
        facts(V1, RUNNING, deleting=True),
        ActionKind.SUSPEND,
        "",
    ),
    ("deleted, not running → remove", facts(V1, DEAD, deleting=True), ActionKind.REMOVE, ""),
]


@pytest.mark.parametrize(
    ("facts_", "expected", "phase"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_deployment_decision(facts_: DeploymentFacts, expected: ActionKind, phase: str) -> None:
    action = decide_deployment(facts_)
    assert action.kind is expected, action
    if phase:
        assert action.phase == phase
    assert action.reason


def test_deploy_arguments() -> None:
    resumed = decide_deployment(
        facts(
            dep(spec={"version": "2"}),
            replace(STOPPED_BY_SP, stopped_by="tx-suspend-1"),
            generation=2,
            status=SUSPENDED_SP,
        )
    )
    # a resume starts the spec that ran; the changed one is an upgrade afterwards, planned
    assert resumed.detail == {"spec": spec_of(V1), "savepoint": "tx-suspend-1"}
    after_cancel = decide_deployment(
        facts(dep(spec={"version": "2"}), STOPPED_BY_SP, generation=2, status=CANCELLED_G1)
    )
    assert after_cancel.detail["savepoint"] == "tx-v1-final"
    assert after_cancel.detail["spec"]["version"] == "2"
    unsaved = DeploymentStatus(suspended=Suspended(savepoint=None, cause="x", at=NOW))
    assert decide_deployment(facts(V1, DEAD, status=unsaved)).detail["savepoint"] is None
    recorded = decide_deployment(facts(V1, STOPPED_BY_SP))
    assert recorded.detail == {"record_cancel": "tx-sp"}


def sp(name: str, age: float, restorable: bool = True) -> SavepointSeen:
    return SavepointSeen(name, "tx", "1", NOW - age, restorable)


def test_periodic_savepoint_due_and_not() -> None:
    sched = dep(savepoints={"interval": "60s"})
    due = facts(sched, RUNNING, status=DeploymentStatus(restart_nonce=0, last_periodic=NOW - 61))
    assert decide_deployment(due).kind is ActionKind.PERIODIC_SAVEPOINT
    early = facts(sched, RUNNING, status=DeploymentStatus(restart_nonce=0, last_periodic=NOW - 5))
    assert decide_deployment(early).kind is ActionKind.NONE
    first = facts(sched, RUNNING)  # since the job's submission, 100 s ago
    assert decide_deployment(first).kind is ActionKind.PERIODIC_SAVEPOINT
    sick = facts(sched, replace(RUNNING, healthy=False))
    assert decide_deployment(sick).kind is ActionKind.NONE


def test_prune_by_count_and_age_keeps_newest_restorable() -> None:
    sched = dep(savepoints={"interval": "1 day", "max_count": 2, "max_age": "100s"})
    seen = [
        sp("p4", 10, restorable=False),
        sp("p3", 20),
        sp("p2", 30),
        sp("p1", 500),
        sp("user", 1),
    ]
    hist = [SavepointRecord(name=n, kind="periodic", at=0) for n in ("p1", "p2", "p3", "p4")]
    status = DeploymentStatus(restart_nonce=0, last_periodic=NOW, savepoint_history=hist)
    action = decide_deployment(facts(sched, RUNNING, status=status, savepoints=seen))
    assert action.kind is ActionKind.PRUNE
    # p4, p3 are the newest two; p2 beyond the count, p1 too old; the export "user" is not ours
    assert action.detail["names"] == ["p2", "p1"]
    # p3 is the newest restorable of the job when "user" is gone: never pruned, by any rule
    only_mine = [s for s in seen if s.name != "user"]
    tight = dep(savepoints={"interval": "1 day", "max_count": 1, "max_age": "1s"})
    action = decide_deployment(facts(tight, RUNNING, status=status, savepoints=only_mine))
    assert "p3" not in action.detail["names"] and set(action.detail["names"]) == {"p4", "p2", "p1"}
    # nor the suspend's savepoint, nor a protected one
    susp = status.model_copy(update={"suspended": Suspended(savepoint="p2", cause="x", at=NOW)})
    action = decide_deployment(
        facts(tight, DEAD, status=susp, savepoints=only_mine, protected={"p1"})
    )
    assert action.kind is ActionKind.DEPLOY  # resuming comes first
    action = decide_deployment(
        facts(
            dep(state="suspended", savepoints={"max_count": 1}),
            DEAD,
            status=susp,
            savepoints=only_mine,
            protected={"p1"},
        )
    )
    # p4 the newest (count 1), p3 the newest restorable, p2 the suspend's, p1 protected
    assert action.kind is ActionKind.NONE, action


REQ, REQ_CANCEL = (
    SavepointRequest(name="tx-sp", job="tx"),
    SavepointRequest(name="tx-sp", job="tx", cancel=True),
)


def rfacts(job: JobSeen = RUNNING, **kw: Any) -> RequestFacts:
    return RequestFacts(
        request=kw.pop("request", REQ_CANCEL),
        status=kw.pop("status", RequestStatus()),
        job=job,
        **kw,
    )


REQUEST_CASES = [
    ("pending, job running → take it", rfacts(), ActionKind.TAKE_SAVEPOINT),
    ("without cancel too", rfacts(request=REQ), ActionKind.TAKE_SAVEPOINT),
    ("job not running → fail", rfacts(DEAD), ActionKind.FAIL_REQUEST),
    ("job never deployed → fail", rfacts(NEVER), ActionKind.FAIL_REQUEST),
    ("name taken → fail", rfacts(name_taken=True), ActionKind.FAIL_REQUEST),
    (
        "in flight → continue (even if the name now exists)",
        rfacts(
            DEAD,
            name_taken=True,
            inflight=InFlight("SavepointRequest", "tx-sp", "take-savepoint", 1),
        ),
        ActionKind.CONTINUE,
    ),
    ("deployment busy → wait", rfacts(deployment_busy=True), ActionKind.WAIT),
    ("master down → wait", rfacts(cluster_up=False), ActionKind.WAIT),
    ("exported → nothing", rfacts(status=RequestStatus(state="Exported")), ActionKind.NONE),
    ("failed → nothing", rfacts(status=RequestStatus(state="Failed")), ActionKind.NONE),
    ("deleted → remove", rfacts(deleting=True), ActionKind.REMOVE),
]


@pytest.mark.parametrize(
    ("facts_", "expected"), [c[1:] for c in REQUEST_CASES], ids=[c[0] for c in REQUEST_CASES]
)
def test_request_decision(facts_: RequestFacts, expected: ActionKind) -> None:
    action = decide_request(facts_)
    assert action.kind is expected, action
    assert action.reason
