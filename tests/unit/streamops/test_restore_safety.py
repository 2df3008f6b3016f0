"""A restore that cannot hurt a running job, and savepoints that stand alone (issue 44.4).

Real files in a temporary state root; the master is the edge (a fake ``state()`` answer).
"""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path
from typing import Any

import pytest

from streamops import jobs
from streamops.exceptions import JobAlreadyRunning, SavepointError
from streamops.settings import Settings
from streamops.spec import spec_from_dict
from streamops.state.layout import write_json_atomic
from streamops.state.savepoints.catalogue import verify_savepoint
from streamops.world import restore, submit
from streamops_contract.state.savepoints.create import create_savepoint

JOB = "fleet-pings"
STAGES = ("trips", "avg-speed-5m")
FILES = {
    "metadata": '{"id":"6f1c"}',
    "offsets/0": 'v1\n{"batchWatermarkMs":0}\n{"file":"a.csv"}',
    "commits/0": 'v1\n{"nextBatchWatermarkMs":0}',
    "state/0/0/1.delta": "x" * 300,
    "state/0/1/1.delta": "y" * 200,
}


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings.from_env({}, state_root=str(tmp_path / "state"))


def checkpoint(settings: Settings, stage: str) -> Path:
    root = settings.layout.checkpoint(JOB, stage)
    for rel, text in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def savepoint(settings: Settings, name: str = "sp") -> None:
    """A savepoint of both stages at batch 0, then the live job goes on to batch 1."""
    dirs = {s: checkpoint(settings, s) for s in STAGES}
    entries = {s: {"batch_id": 0, "sources": [], "stateful": True} for s in STAGES}
    create_savepoint(settings.layout, name, job=JOB, version="2", stage_dirs=dirs,
                     stage_entries=entries)  # fmt: skip
    for root in dirs.values():
        (root / "offsets/1").write_text("v1\n{}\n{}")
        (root / "commits/1").write_text("v1\n{}")
        (root / "state/0/0/2.delta").write_text("z" * 50)


def snapshot(settings: Settings) -> dict[str, bytes]:
    """Every file under the job's checkpoints, byte for byte."""
    root = settings.layout.checkpoint(JOB, STAGES[0]).parent
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}  # fmt: skip


def spec() -> Any:
    return spec_from_dict({"name": JOB, "version": "2", "entrypoint": "spark_jobs.fleet_pings"},
                          "test")  # fmt: skip


class LiveMaster:
    """``GET :8080/json/`` of a master running the job's driver ``driver-7``."""

    def __init__(self, settings: Settings) -> None:
        write_json_atomic(settings.layout.status_file(JOB), {
            "job": JOB, "state": "RUNNING", "driver_id": "driver-7", "version": "2",
            "started_at": time.time() - 60, "stages": {}})  # fmt: skip

    def state(self) -> dict[str, Any]:
        return {
            "url": "spark://127.0.0.1:7077", "workers": [], "aliveworkers": 0, "cores": 0,
            "coresused": 0, "status": "ALIVE", "completedapps": [], "completeddrivers": [],
            "activedrivers": [{"id": "driver-7", "starttime": "1767225600000",
                               "state": "RUNNING", "cores": 1, "memory": 1024, "worker": "w",
                               "mainclass": "org.apache.spark.deploy.PythonRunner"}],
            "activeapps": [{"id": "app-1", "name": JOB, "state": "RUNNING", "cores": 2,
                            "user": "spark", "starttime": 1767225601000, "duration": 5}],
        }  # fmt: skip

    def create_submission(self, body: dict[str, Any]) -> str:
        raise AssertionError("nothing may be submitted beside a live driver")


def test_restore_on_a_running_job_is_refused_and_its_checkpoints_untouched(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    savepoint(settings)
    master = LiveMaster(settings)
    monkeypatch.setattr(jobs, "MasterClient", lambda _settings: master)
    monkeypatch.setattr(submit, "MasterClient", lambda _settings: master)
    before = snapshot(settings)

    with pytest.raises(JobAlreadyRunning) as refused:
        restore.start_from_savepoint(spec(), settings, "sp", list(STAGES), wait_healthy=None)

    assert snapshot(settings) == before
    said = str(refused.value)
    assert "driver-7" in said and "untouched" in said
    assert f"streamops upgrade {JOB}" in said and f"streamops cancel {JOB}" in said


@pytest.mark.parametrize("damage", ["truncated", "same size, other bytes", "missing stage"])
def test_a_damaged_savepoint_is_refused_before_any_checkpoint_is_touched(
    settings: Settings, damage: str
) -> None:
    """The damage is in the stage the plan names last: the first must not be swapped in."""
    savepoint(settings)
    last = settings.layout.savepoint("sp") / "stages" / STAGES[-1]
    victim = last / "state/0/1/1.delta"
    os.chmod(victim, 0o644)
    if damage == "truncated":
        victim.write_text("y" * 10)
    elif damage == "same size, other bytes":
        victim.write_text("Y" * 200)
    else:
        os.rename(last, last.with_name(".gone"))
    before = snapshot(settings)
    plan = restore.restore_plan(restore.catalogue.get_savepoint(settings.layout, "sp"), STAGES)

    with pytest.raises(SavepointError, match=f"stage {STAGES[-1]}"):
        restore.prepare_checkpoints(settings, JOB, plan)

    assert snapshot(settings) == before
    leftovers = [p.name for p in settings.layout.checkpoint(JOB, "x").parent.iterdir()]
    assert sorted(leftovers) == sorted(STAGES)


def test_a_sound_restore_swaps_in_every_stage_as_independent_copies(settings: Settings) -> None:
    savepoint(settings)
    plan = restore.restore_plan(restore.catalogue.get_savepoint(settings.layout, "sp"), STAGES)
    restore.prepare_checkpoints(settings, JOB, plan)
    saved = settings.layout.savepoint("sp") / "stages"
    for stage in STAGES:
        live = settings.layout.checkpoint(JOB, stage)
        assert sorted(str(p.relative_to(live)) for p in live.rglob("*") if p.is_file()) == \
            sorted(FILES)  # fmt: skip
        restored, kept = live / "state/0/0/1.delta", saved / stage / "state/0/0/1.delta"
        assert restored.read_bytes() == kept.read_bytes()
        assert restored.stat().st_ino != kept.stat().st_ino
        assert restored.stat().st_mode & 0o200, "a restored checkpoint file stays writable"


def test_a_savepoint_file_changed_in_place_leaves_the_live_checkpoint_unchanged(
    settings: Settings,
) -> None:
    savepoint(settings)
    saved = settings.layout.savepoint("sp") / "stages/trips/state/0/0/1.delta"
    live = settings.layout.checkpoint(JOB, "trips") / "state/0/0/1.delta"
    assert stat.S_IMODE(saved.stat().st_mode) == 0o444 and saved.stat().st_nlink == 1
    os.chmod(saved, 0o644)  # a stray edit by someone who can (root ignores 0444 anyway)
    with open(saved, "r+b") as fh:
        fh.truncate(7)
    assert live.read_text() == FILES["state/0/0/1.delta"]
    with pytest.raises(SavepointError, match=r"1\.delta: 7 bytes, manifest says 300"):
        verify_savepoint(settings.layout, "sp")


def test_every_savepoint_file_has_its_sha256(settings: Settings) -> None:
    savepoint(settings)
    manifest = restore.catalogue.get_savepoint(settings.layout, "sp")
    assert manifest.files == len(STAGES) * len(FILES)
    assert all(len(f.sha256 or "") == 64 for f in manifest.checksums)


def test_a_savepoint_dir_on_another_filesystem_works(settings: Settings) -> None:
    shm = Path("/dev/shm")
    if not shm.is_dir() or os.stat(shm).st_dev == os.stat(settings.layout.root.parent).st_dev:
        pytest.skip("no second file system here")
    elsewhere = shm / f"streamops-test-savepoints-{os.getpid()}"
    elsewhere.mkdir()
    try:
        settings.layout.root.mkdir(parents=True)
        settings.layout.savepoints_dir.symlink_to(elsewhere)
        savepoint(settings)
        verify_savepoint(settings.layout, "sp", deep=True)
        plan = restore.restore_plan(restore.catalogue.get_savepoint(settings.layout, "sp"),
                                    STAGES)  # fmt: skip
        restore.prepare_checkpoints(settings, JOB, plan)
        assert (settings.layout.checkpoint(JOB, "trips") / "state/0/0/1.delta").read_text() == \
            FILES["state/0/0/1.delta"]  # fmt: skip
    finally:
        import shutil

        shutil.rmtree(elsewhere, ignore_errors=True)
