"""The reconcile under concurrency and bad files (a real state root; observation and actions
faked, :mod:`support.reconcile_world`): concurrent applies lose no generation, a resumed action
records its outcome against the generation it ran for, an exception of any type inside an
action is that resource's failure, and an unreadable resource file is a condition on that
resource while the others reconcile."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from support.reconcile_world import Killed, dep

from streamops.cli import main
from streamops.declarative import act, inflight, reconcile
from streamops.declarative.observe import JobSeen
from streamops.exceptions import JobError
from streamops.settings import Settings
from streamops.state.declarative.resources import SavepointRequest
from streamops.state.declarative.store import Store

REPO = Path(__file__).resolve().parents[3]


# --- apply takes the store's lock ---------------------------------------------------------
def test_two_concurrent_applies_get_distinct_generations(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch,
                                                         ) -> None:  # fmt: skip
    """The first apply pauses between reading the generation and writing it (until the second
    apply is done, or a second at most): the second one must wait for it, not read the same
    generation."""
    store = Store(Settings.from_env({}, state_root=str(tmp_path)).layout)
    store.apply(dep("a"))
    first_read, second_done = threading.Event(), threading.Event()
    real_get = Store.get

    def get(self: Store, kind: str, name: str) -> Any:
        found = real_get(self, kind, name)
        if threading.current_thread().name == "first" and not first_read.is_set():
            first_read.set()
            second_done.wait(1.0)  # bounded: with the lock, the second apply waits for us
        return found

    monkeypatch.setattr(Store, "get", get)
    generations: dict[str, int] = {}

    def first() -> None:
        generations["v2"] = store.apply(dep("a", spec={"version": "2"}))[0].generation

    def second() -> None:
        assert first_read.wait(30)
        generations["v3"] = store.apply(dep("a", spec={"version": "3"}))[0].generation
        second_done.set()

    threads = [threading.Thread(target=first, name="first"),
               threading.Thread(target=second, name="second")]  # fmt: skip
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert sorted(generations.values()) == [2, 3]
    stored = store.get("JobDeployment", "a")
    assert stored is not None and stored.generation == 3
    last = "v2" if generations["v2"] == 3 else "v3"
    assert stored.resource.spec.version == last[1:]  # the one written last is the one kept


_APPLIES = """
import sys
from support.reconcile_world import dep
from streamops.state.declarative.store import Store
from streamops.settings import Settings
store = Store(Settings.from_env({}, state_root=sys.argv[1]).layout)
for i in range(int(sys.argv[3])):
    applied, _ = store.apply(dep("a", spec={"version": f"{sys.argv[2]}.{i}"}))
    print(applied.generation)
"""


def test_applies_from_several_processes_lose_no_generation(tmp_path: Path) -> None:
    store = Store(Settings.from_env({}, state_root=str(tmp_path)).layout)
    store.apply(dep("a"))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "tests"), *sys.path])}
    procs, each = [], 15
    for writer in range(3):
        procs.append(subprocess.Popen(
            [sys.executable, "-c", _APPLIES, str(tmp_path), str(writer), str(each)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env))  # fmt: skip
    seen: list[int] = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        seen += [int(line) for line in out.split()]
    assert sorted(seen) == list(range(2, 2 + 3 * each))  # every one distinct, none lost
    stored = store.get("JobDeployment", "a")
    assert stored is not None and stored.generation == 1 + 3 * each


# --- a resumed action's outcome belongs to its generation ---------------------------------
def test_a_resumed_upgrade_that_fails_does_not_hold_back_a_newer_apply(
    world: dict[str, Any],
) -> None:
    store, settings, calls = world["store"], world["settings"], world["calls"]
    store.apply(dep("a"))
    reconcile.reconcile_once(settings)
    store.apply(dep("a", spec={"version": "2"}))
    world["behaviour"]["a"] = Killed()
    with pytest.raises(Killed):
        reconcile.reconcile_once(settings)  # the upgrade to v2 is in flight
    record = inflight.load(store, "JobDeployment", "a")
    assert record is not None and (record.action, record.generation) == ("upgrade", 2)
    store.apply(dep("a", spec={"version": "3"}))  # generation 3 meanwhile
    world["behaviour"]["a"] = [JobError("v2 did not become healthy; rolled back to v1"), None]
    result = reconcile.reconcile_once(settings)
    assert [a for _, a, _ in result.actions] == ["continue", "upgrade"]
    assert calls[-2][2] == record.owner and calls[-1][1] == "upgrade"  # v2 resumed, then v3
    assert world["jobs"]["a"].version == "3"
    status = store.deployment_status("a")
    assert status.failed is None and status.observed_generation == 3
    assert [(o.generation, o.action, o.result) for o in status.outcomes[-3:]] == [
        (1, "deploy", "done"), (2, "upgrade", "failed"), (3, "upgrade", "done")]  # fmt: skip
    assert "rolled back" in status.outcomes[-2].message
    assert result.errors and "generation 2" in result.errors[0]


# --- any exception inside an action is that resource's failure ----------------------------
def test_an_exception_of_any_type_in_an_action_fails_that_resource_only(
    world: dict[str, Any],
) -> None:
    store, settings = world["store"], world["settings"]
    store.apply(dep("a"))
    store.apply(dep("b"))
    world["behaviour"]["a"] = KeyError("driver_id")
    result = reconcile.reconcile_once(settings)  # does not raise
    assert [e for e in result.errors if "JobDeployment/a" in e] == [
        "JobDeployment/a: deploy: KeyError: 'driver_id'"]  # fmt: skip
    status = store.deployment_status("a")
    assert status.failed and status.failed.action == "deploy"
    assert status.failed.message == "KeyError: 'driver_id'"
    assert status.condition("Ready").status == "False"  # type: ignore[union-attr]
    assert status.condition("Progressing").status == "False"  # type: ignore[union-attr]
    assert inflight.load(store, "JobDeployment", "a") is None
    assert store.deployment_status("b").phase == "Running"  # the pass went on
    del world["behaviour"]["a"]
    reconcile.reconcile_once(settings)  # the next pass tries again (count 1 < MAX_FAILURES)
    assert store.deployment_status("a").phase == "Running"


def test_an_exception_of_any_type_in_a_savepoint_request_fails_that_request_only(
    world: dict[str, Any], monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    store, settings = world["store"], world["settings"]
    world["jobs"]["x"] = JobSeen(live=True, healthy=True, state="RUNNING", submitted_at=1.0)
    store.apply(SavepointRequest(name="x-sp", job="x"))
    store.apply(dep("b"))

    def broken(*_: Any) -> Any:
        raise AttributeError("'NoneType' object has no attribute 'answer'")

    monkeypatch.setattr(act, "take_savepoint", broken)
    result = reconcile.reconcile_once(settings)
    status = store.request_status("x-sp")
    assert status.state == "Failed" and status.message.startswith("AttributeError: ")
    assert inflight.load(store, "SavepointRequest", "x-sp") is None
    assert any("SavepointRequest/x-sp" in e and "AttributeError" in e for e in result.errors)
    assert store.deployment_status("b").phase == "Running"


# --- an unreadable resource file is a condition on that resource --------------------------
BAD_FILES = {
    "not JSON": b'{"resource": {"name": "bad", ',
    "bad schema": json.dumps(
        {"resource": {"name": "bad", "state": "paused"}, "generation": 4, "applied_at": 1.0}
    ).encode(),  # fmt: skip
    "not UTF-8": b'{"resource": {"name": "b\xff\xfead"}, "generation": 1}',
}


@pytest.mark.parametrize("what", sorted(BAD_FILES))
def test_an_unreadable_deployment_file_is_its_condition_and_the_others_reconcile(
    world: dict[str, Any], what: str, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    store, settings, calls = world["store"], world["settings"], world["calls"]
    for name in ("a", "bad", "z"):
        store.apply(dep(name))
    reconcile.reconcile_once(settings)
    path = store.resource_file("JobDeployment", "bad")
    path.write_bytes(BAD_FILES[what])
    store.apply(dep("a", spec={"version": "2"}))
    store.apply(dep("z", spec={"version": "2"}))
    before = len(calls)
    result = reconcile.reconcile_once(settings)  # does not raise
    assert [(j, a) for j, a, _ in calls[before:]] == [("a", "upgrade"), ("z", "upgrade")]
    assert len(result.errors) == 1 and result.errors[0].startswith("JobDeployment/bad: ")
    assert str(path) in result.errors[0]
    if what == "not UTF-8":
        assert "not valid UTF-8 at byte 24" in result.errors[0]
    valid = store.deployment_status("bad").condition("Valid")
    assert valid is not None and valid.status == "False" and valid.reason == "Unreadable"
    assert str(path) in valid.message
    # visible in get, whose other rows are whole
    monkeypatch.setenv("COLUMNS", "400")
    assert main(["--state-root", str(settings.layout.root), "get", "deployments"]) == 0
    rows = {line.split()[0]: line for line in capsys.readouterr().out.splitlines() if line}
    assert "Invalid" in rows["bad"] and "Running" in rows["a"] and "Running" in rows["z"]
    assert " 2/2 " in rows["a"] and " 2/2 " in rows["z"]
    assert main(["--state-root", str(settings.layout.root), "get", "deployments", "bad"]) == 0
    out = capsys.readouterr().out
    assert "Valid" in out and "Unreadable" in out
    assert main(["--state-root", str(settings.layout.root), "get", "deployments", "--json"]) == 0
    (listed,) = [r for r in json.loads(capsys.readouterr().out) if r["name"] == "bad"]
    assert str(path) in listed["error"]
    # applied again, it is readable and reconciled; its generation is above any it had
    applied, verb = store.apply(dep("bad", spec={"version": "2"}))
    assert verb == "configured" and applied.generation == 2  # above the one it was seen at
    reconcile.reconcile_once(settings)
    status = store.deployment_status("bad")
    assert status.condition("Valid").status == "True"  # type: ignore[union-attr]
    assert status.phase == "Running" and status.version == "2"


def test_an_unreadable_savepoint_request_file_holds_back_nothing(world: dict[str, Any]) -> None:
    store, settings = world["store"], world["settings"]
    store.apply(SavepointRequest(name="x-sp", job="x"))
    store.apply(dep("a"))
    path = store.resource_file("SavepointRequest", "x-sp")
    path.write_bytes(b"\x00\xff garbage")
    result = reconcile.reconcile_once(settings)
    assert store.deployment_status("a").phase == "Running"
    assert len(result.errors) == 1 and "x-sp" in result.errors[0]
    complete = store.request_status("x-sp").condition("Valid")
    assert complete is not None and complete.status == "False"


def test_a_stray_file_named_unlike_any_resource_holds_back_nothing(world: dict[str, Any]) -> None:
    store, settings = world["store"], world["settings"]
    store.apply(dep("a"))
    (store.resource_file("JobDeployment", "a").parent / "a copy (2).json").write_text("{}")
    result = reconcile.reconcile_once(settings)
    assert store.deployment_status("a").phase == "Running"
    assert len(result.errors) == 1 and "a copy (2)" in result.errors[0]
