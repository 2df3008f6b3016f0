"""The savepoint store, on real files: copies, all-or-nothing writes, retention, restore."""

from __future__ import annotations

import errno
import json
import logging
import os
import time
from pathlib import Path
from typing import Any

import pytest

from streamops.exceptions import (
    ConfigError,
    SavepointError,
    SavepointExists,
    SavepointNotFound,
    SavepointProtected,
    UnsafeNameError,
)
from streamops.state.layout import StateLayout, read_json, write_json_atomic
from streamops.state.savepoints.catalogue import (
    RetentionPolicy,
    apply_retention,
    check_savepoint,
    delete_savepoint,
    get_savepoint,
    list_savepoints,
    protected_savepoints,
    remove_stale,
    verify_savepoint,
)
from streamops.state.savepoints.restore import restore_stage
from streamops_contract.state.savepoints import copying, create
from streamops_contract.state.savepoints.create import create_savepoint
from streamops_contract.state.savepoints.manifest import Manifest

ALPHA = {"source": "alpha:/data/alpha", "file": "pings-000000000012.csv"}
BETA = {"source": "beta:http://h:8000/pings", "sequence": 812}

# A Spark checkpoint as it looks on disk, plus a file being written (to be skipped).
CHECKPOINT_FILES = {
    "metadata": '{"id":"6f1c"}',
    "offsets/0": 'v1\n{"batchWatermarkMs":0}\n{"file":"pings-000000000011.csv"}',
    "offsets/1": 'v1\n{"batchWatermarkMs":0}\n{"file":"pings-000000000012.csv"}',
    "commits/0": 'v1\n{"nextBatchWatermarkMs":0}',
    "commits/1": 'v1\n{"nextBatchWatermarkMs":0}',
    "state/0/0/1.delta": "x" * 300,
    "state/0/0/.1.delta.crc": "crc",
    "state/0/1/1.delta": "y" * 200,
    "sources/0/0": 'v1\n{"path":"file:///data/alpha/pings-000000000011.csv"}',
}
SPARK_TEMP_FILES = ("offsets/.2.5b0c.tmp", "offsets/..2.5b0c.tmp.crc")


@pytest.fixture
def layout(tmp_path: Path) -> StateLayout:
    return StateLayout.at(tmp_path / "state")


def fake_checkpoint(layout: StateLayout, job: str, stage: str) -> Path:
    root = layout.checkpoint(job, stage)
    for rel, text in CHECKPOINT_FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    for rel in SPARK_TEMP_FILES:
        (root / rel).write_text("half-written")
    return root


def entry(*sources: dict[str, Any], batch_id: int = 1, stateful: bool = True) -> dict[str, Any]:
    return {"batch_id": batch_id, "sources": list(sources), "stateful": stateful,
            "state": {"operators": []} if stateful else None, "descriptor": None}  # fmt: skip


def make(
    layout: StateLayout, name: str, job: str = "fleet-pings", *, created_at: float | None = None,
    stages: tuple[str, ...] = ("vehicles", "windows"), **kwargs: Any,
) -> Manifest:  # fmt: skip
    dirs = {s: fake_checkpoint(layout, job, s) for s in stages}
    entries = {s: entry(ALPHA, BETA) for s in stages}
    manifest = create_savepoint(layout, name, job=job, version="1", stage_dirs=dirs,
                                stage_entries=entries, **kwargs)  # fmt: skip
    if created_at is not None:
        manifest = manifest.model_copy(update={"created_at": created_at})
        write_json_atomic(layout.savepoint(name) / "manifest.json", manifest.model_dump())
    return manifest


def savepoint_dir_names(layout: StateLayout) -> list[str]:
    if not layout.savepoints_dir.exists():
        return []
    return sorted(p.name for p in layout.savepoints_dir.iterdir())


# --- create ---------------------------------------------------------------------------------
def test_create_copies_every_checkpoint_file(layout: StateLayout) -> None:
    m = make(layout, "before-v2", created_by="driver-1", from_savepoint="v0")

    sp = layout.savepoint("before-v2")
    assert savepoint_dir_names(layout) == ["before-v2"]
    for stage in ("vehicles", "windows"):
        for rel in CHECKPOINT_FILES:
            copy, orig = sp / "stages" / stage / rel, layout.checkpoint("fleet-pings", stage) / rel
            assert copy.read_bytes() == orig.read_bytes()
            assert copy.stat().st_ino != orig.stat().st_ino
            assert copy.stat().st_mode & 0o777 == 0o444
        for rel in SPARK_TEMP_FILES:
            assert not (sp / "stages" / stage / rel).exists()
    assert (m.name, m.job, m.version, m.created_by, m.from_savepoint, m.cancel) == (
        "before-v2", "fleet-pings", "1", "driver-1", "v0", False
    )  # fmt: skip
    size = sum(len(t) for t in CHECKPOINT_FILES.values())
    assert m.stages["vehicles"].files == len(CHECKPOINT_FILES)
    assert m.stages["vehicles"].bytes == size
    assert (m.files, m.bytes) == (2 * len(CHECKPOINT_FILES), 2 * size)
    assert m.stages["windows"].sources == [ALPHA, BETA]
    assert m.stages["windows"].batch_id == 1
    assert all(len(f.sha256 or "") == 64 for f in m.checksums)
    assert {f.path for f in m.checksums} >= {"stages/vehicles/state/0/0/1.delta"}
    assert Manifest.model_validate(read_json(sp / "manifest.json")) == m
    assert get_savepoint(layout, "before-v2") == m


def test_positions_list_every_stage_offset_per_source(layout: StateLayout) -> None:
    m = make(layout, "sp")
    assert m.positions() == {
        "alpha:/data/alpha": [("vehicles", ALPHA), ("windows", ALPHA)],
        "beta:http://h:8000/pings": [("vehicles", BETA), ("windows", BETA)],
    }


def test_a_failure_mid_copy_leaves_nothing(
    layout: StateLayout, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_copy = copying.copy_file

    def failing_copy(src: str, dst: str, rel: str, *args: Any) -> Any:
        if "windows" in dst and rel == "commits/1":
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_copy(src, dst, rel, *args)

    monkeypatch.setattr(copying, "copy_file", failing_copy)
    with pytest.raises(SavepointError, match="stage windows: cannot copy file commits/1: No sp"):
        make(layout, "sp")
    assert savepoint_dir_names(layout) == []
    assert list_savepoints(layout) == []


def test_a_missing_stage_dir_names_the_stage(layout: StateLayout) -> None:
    dirs = {"vehicles": fake_checkpoint(layout, "j", "vehicles"), "zz": layout.root / "nope"}
    with pytest.raises(SavepointError, match="stage zz: checkpoint directory .* does not exist"):
        create_savepoint(layout, "sp", job="j", version="1", stage_dirs=dirs,
                         stage_entries={"vehicles": entry(), "zz": entry()})  # fmt: skip
    assert savepoint_dir_names(layout) == []


def test_a_failed_verification_leaves_nothing(
    layout: StateLayout, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(create, "check_files", lambda *a, **k: ["stages/x/y: missing"])
    with pytest.raises(SavepointError, match="failed verification: 1 problem.*stages/x/y"):
        make(layout, "sp")
    assert savepoint_dir_names(layout) == []


def test_stage_args_must_match(layout: StateLayout) -> None:
    dirs = {"vehicles": fake_checkpoint(layout, "j", "vehicles")}
    with pytest.raises(SavepointError, match="must name the same stages"):
        create_savepoint(layout, "sp", job="j", version="1", stage_dirs=dirs,
                         stage_entries={"windows": entry()})  # fmt: skip
    with pytest.raises(SavepointError, match="stage vehicles: invalid manifest entry"):
        create_savepoint(layout, "sp", job="j", version="1", stage_dirs=dirs,
                         stage_entries={"vehicles": {"surprise": 1}})  # fmt: skip
    assert savepoint_dir_names(layout) == []


def test_a_name_taken_while_copying_is_refused(
    layout: StateLayout, monkeypatch: pytest.MonkeyPatch
) -> None:
    def other_writer_wins(*args: Any, **kwargs: Any) -> list[str]:
        (layout.savepoint("sp") / "stages").mkdir(parents=True)
        return []

    monkeypatch.setattr(create, "check_files", other_writer_wins)
    with pytest.raises(SavepointExists, match="created meanwhile"):
        make(layout, "sp")
    assert savepoint_dir_names(layout) == ["sp"]
    assert (layout.savepoint("sp") / "stages").is_dir()


def test_an_unknown_checksum_mode_is_refused(layout: StateLayout) -> None:
    with pytest.raises(ConfigError, match="checksum must be 'sha256' or 'size', got 'md5'"):
        make(layout, "sp", checksum="md5")


def test_an_existing_name_is_refused(layout: StateLayout) -> None:
    first = make(layout, "sp")
    with pytest.raises(SavepointExists, match="'sp' exists already"):
        make(layout, "sp", job="other")
    assert get_savepoint(layout, "sp") == first


@pytest.mark.parametrize("name", ["../x", "a/b", "", ".hidden", "UPPER"])
def test_unsafe_names_are_refused(layout: StateLayout, name: str) -> None:
    with pytest.raises(UnsafeNameError):
        make(layout, name)
    assert savepoint_dir_names(layout) == []


def test_unsafe_stage_name_is_refused(layout: StateLayout, tmp_path: Path) -> None:
    with pytest.raises(UnsafeNameError):
        create_savepoint(layout, "sp", job="j", version="1", stage_dirs={"../x": tmp_path},
                         stage_entries={"../x": entry()})  # fmt: skip


def test_size_only_checksums(layout: StateLayout) -> None:
    m = make(layout, "sp", checksum="size")
    assert all(f.sha256 is None and f.bytes > 0 for f in m.checksums)
    assert verify_savepoint(layout, "sp", deep=True) == m


# --- verify, get, list ------------------------------------------------------------------------
def test_verify_catches_a_truncated_file(layout: StateLayout) -> None:
    make(layout, "sp")
    (layout.savepoint("sp") / "stages/windows/state/0/1/1.delta").write_text("y" * 10)
    problems = check_savepoint(layout, "sp")
    assert problems == ["stages/windows/state/0/1/1.delta: 10 bytes, manifest says 200"]
    with pytest.raises(SavepointError, match=r"'sp' is damaged: 1 problem.*1\.delta: 10 bytes"):
        verify_savepoint(layout, "sp", deep=False)


def test_deep_verify_catches_same_size_corruption_and_missing_files(layout: StateLayout) -> None:
    make(layout, "sp")
    sp = layout.savepoint("sp")
    (sp / "stages/windows/state/0/1/1.delta").write_text("z" * 200)
    (sp / "stages/vehicles/commits/1").unlink()
    assert check_savepoint(layout, "sp", deep=False) == [
        "stages/vehicles/commits/1: No such file or directory"
    ]
    assert check_savepoint(layout, "sp", deep=True) == [
        "stages/vehicles/commits/1: No such file or directory",
        "stages/windows/state/0/1/1.delta: sha256 differs",
    ]


def test_a_corrupt_manifest_is_reported_not_listed(
    layout: StateLayout, caplog: pytest.LogCaptureFixture
) -> None:
    make(layout, "good")
    make(layout, "bad", job="other")
    (layout.savepoint("bad") / "manifest.json").write_text('{"name": "bad", ')
    with caplog.at_level(logging.WARNING, logger="streamops.state.savepoints"):
        assert [i.name for i in list_savepoints(layout)] == ["good"]
    assert "not listed: savepoint 'bad': unreadable manifest.json" in caplog.text
    assert check_savepoint(layout, "bad")[0].startswith("savepoint 'bad': unreadable")
    with pytest.raises(SavepointError, match="unreadable manifest.json"):
        get_savepoint(layout, "bad")


def test_list_is_newest_first_and_filters_by_job(layout: StateLayout) -> None:
    now = time.time()
    make(layout, "a-old", "job-a", created_at=now - 300)
    make(layout, "b-mid", "job-b", created_at=now - 200, stages=("vehicles",))
    make(layout, "a-new", "job-a", created_at=now - 100)
    infos = list_savepoints(layout)
    assert [i.name for i in infos] == ["a-new", "b-mid", "a-old"]
    assert infos[1].stages == ("vehicles",)
    assert (infos[1].job, infos[1].version, infos[1].path) == (
        "job-b", "1", layout.savepoint("b-mid")
    )  # fmt: skip
    assert infos[0].bytes == get_savepoint(layout, "a-new").bytes
    assert [i.name for i in list_savepoints(layout, "job-a")] == ["a-new", "a-old"]
    assert list_savepoints(layout, "job-c") == []


def test_list_of_an_empty_state_root(layout: StateLayout) -> None:
    assert list_savepoints(layout) == []


def test_partial_and_deleting_dirs_are_never_listed_and_removed_once_stale(
    layout: StateLayout,
) -> None:
    make(layout, "sp")
    sp = layout.savepoints_dir
    for stray in (".sp2.partial-123", ".deleting-sp3", ".old.partial-9", ".deleting-old"):
        (sp / stray).mkdir()
        (sp / stray / "manifest.json").write_text((sp / "sp/manifest.json").read_text())
    hour_ago = time.time() - 3700
    for stray in (".old.partial-9", ".deleting-old"):
        os.utime(sp / stray, (hour_ago, hour_ago))
    assert [i.name for i in list_savepoints(layout)] == ["sp"]
    assert savepoint_dir_names(layout) == [".deleting-sp3", ".sp2.partial-123", "sp"]
    removed = remove_stale(layout, now=time.time() + 7200)
    assert sorted(removed) == [".deleting-sp3", ".sp2.partial-123"]
    assert savepoint_dir_names(layout) == ["sp"]


def test_not_found_lists_the_jobs_savepoints(layout: StateLayout) -> None:
    make(layout, "a-1", "job-a")
    make(layout, "b-1", "job-b")
    with pytest.raises(SavepointNotFound, match=r"no savepoint named 'a-2'.*of job 'job-a': a-1$"):
        get_savepoint(layout, "a-2", job="job-a")
    with pytest.raises(SavepointNotFound, match="there are no savepoints of job 'job-c'"):
        get_savepoint(layout, "c-1", job="job-c")
    with pytest.raises(SavepointNotFound, match="belongs to job 'job-b', not 'job-a'"):
        get_savepoint(layout, "b-1", job="job-a")
    with pytest.raises(SavepointNotFound, match="existing savepoints: "):
        get_savepoint(layout, "zzz")


# --- delete and retention ---------------------------------------------------------------------
def test_delete(layout: StateLayout) -> None:
    make(layout, "sp")
    make(layout, "keep")
    (layout.savepoints_dir / ".deleting-sp").mkdir()  # from an interrupted earlier delete
    delete_savepoint(layout, "sp")
    assert savepoint_dir_names(layout) == ["keep"]
    assert (layout.checkpoint("fleet-pings", "vehicles") / "metadata").exists()
    with pytest.raises(SavepointNotFound, match="no savepoint named 'sp'.*: keep"):
        delete_savepoint(layout, "sp")
    with pytest.raises(UnsafeNameError):
        delete_savepoint(layout, "../checkpoints")


def test_delete_refuses_a_protected_savepoint(layout: StateLayout) -> None:
    make(layout, "sp")
    with pytest.raises(SavepointProtected, match="'sp' is protected: a running job needs it"):
        delete_savepoint(layout, "sp", protected={"sp"})
    why = {"sp": "job 'fleet-pings' (RUNNING) was started from it"}
    with pytest.raises(SavepointProtected, match=r"job 'fleet-pings' \(RUNNING\) was started"):
        delete_savepoint(layout, "sp", protected=why)
    assert [i.name for i in list_savepoints(layout)] == ["sp"]


def test_a_corrupt_savepoint_can_be_deleted(layout: StateLayout) -> None:
    make(layout, "sp")
    (layout.savepoint("sp") / "manifest.json").unlink()
    delete_savepoint(layout, "sp")
    assert savepoint_dir_names(layout) == []


DAY = 86400.0


@pytest.fixture
def history(layout: StateLayout) -> float:
    """job-a: a0 (newest) .. a4, one day apart; job-b: b0, 30 days old."""
    now = 1_800_000_000.0
    for i in range(5):
        make(layout, f"a{i}", "job-a", created_at=now - i * DAY)
    make(layout, "b0", "job-b", created_at=now - 30 * DAY)
    return now


def test_retention_keeps_the_newest_n_per_job(layout: StateLayout, history: float) -> None:
    doomed = apply_retention(layout, RetentionPolicy(keep_last=2), now=history)
    assert doomed == ["a2", "a3", "a4"]
    assert [i.name for i in list_savepoints(layout)] == ["a0", "a1", "b0"]


def test_retention_by_age_never_deletes_the_newest(layout: StateLayout, history: float) -> None:
    doomed = apply_retention(layout, RetentionPolicy(max_age_s=2.5 * DAY), now=history)
    assert doomed == ["a3", "a4"]
    doomed = apply_retention(layout, RetentionPolicy(max_age_s=1), now=history + 100 * DAY)
    assert doomed == ["a1", "a2"]
    assert [i.name for i in list_savepoints(layout)] == ["a0", "b0"]


def test_retention_keeps_protected_savepoints(layout: StateLayout, history: float) -> None:
    doomed = apply_retention(layout, RetentionPolicy(keep_last=1), protected={"a3"}, now=history)
    assert doomed == ["a1", "a2", "a4"]
    assert [i.name for i in list_savepoints(layout)] == ["a0", "a3", "b0"]


def test_retention_dry_run_deletes_nothing(layout: StateLayout, history: float) -> None:
    policy = RetentionPolicy(keep_last=3, max_age_s=0.5 * DAY)
    assert apply_retention(layout, policy, now=history, dry_run=True) == ["a1", "a2", "a3", "a4"]
    assert len(list_savepoints(layout)) == 6


@pytest.mark.parametrize("kwargs", [{"keep_last": 0}, {"max_age_s": 0}, {"max_age_s": -1}])
def test_retention_policy_validates_itself(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ConfigError, match=next(iter(kwargs))):
        RetentionPolicy(**kwargs)


def test_protected_savepoints_come_from_live_jobs(layout: StateLayout) -> None:
    for job, state, sp in [("a", "RUNNING", "a-v1"), ("b", "STARTING", "b-v1"),
                           ("c", "STOPPED", "c-v1"), ("d", "RUNNING", None)]:  # fmt: skip
        write_json_atomic(layout.status_file(job), {"state": state, "from_savepoint": sp})
    assert protected_savepoints(layout) == {
        "a-v1": "job 'a' (RUNNING) was started from it",
        "b-v1": "job 'b' (STARTING) was started from it",
    }
    layout.status_file("e").parent.mkdir()
    layout.status_file("e").write_text("{")
    with pytest.raises(SavepointError, match="cannot tell which savepoints running jobs need"):
        protected_savepoints(layout)


# --- restore ----------------------------------------------------------------------------------
def test_restore_replaces_the_stage_checkpoint(layout: StateLayout) -> None:
    make(layout, "sp")
    dest = layout.checkpoint("fleet-pings", "vehicles")
    (dest / "offsets/2").write_text("a batch after the savepoint")
    (dest / "state/0/0/1.delta").unlink()
    restore_stage(layout, "sp", "vehicles", dest)
    restored = sorted(str(p.relative_to(dest)) for p in dest.rglob("*") if p.is_file())
    assert restored == sorted(CHECKPOINT_FILES)
    saved = layout.savepoint("sp") / "stages/vehicles/state/0/1/1.delta"
    assert (dest / "state/0/1/1.delta").read_bytes() == saved.read_bytes()
    assert (dest / "state/0/1/1.delta").stat().st_ino != saved.stat().st_ino
    assert sorted(p.name for p in dest.parent.iterdir()) == ["vehicles", "windows"]


def test_restore_into_a_new_dir(layout: StateLayout, tmp_path: Path) -> None:
    make(layout, "sp")
    dest = tmp_path / "elsewhere" / "vehicles"
    restore_stage(layout, "sp", "vehicles", dest)
    assert (dest / "metadata").read_text() == CHECKPOINT_FILES["metadata"]
    assert [p.name for p in dest.parent.iterdir()] == ["vehicles"]


def test_restore_of_an_unknown_stage(layout: StateLayout, tmp_path: Path) -> None:
    make(layout, "sp")
    with pytest.raises(SavepointError, match="no stage 'sessions' \\(it has: vehicles, windows"):
        restore_stage(layout, "sp", "sessions", tmp_path / "sessions")
    with pytest.raises(SavepointNotFound):
        restore_stage(layout, "nope", "vehicles", tmp_path / "vehicles")


def test_a_failed_restore_keeps_the_old_checkpoint(
    layout: StateLayout, monkeypatch: pytest.MonkeyPatch
) -> None:
    make(layout, "sp")
    dest = layout.checkpoint("fleet-pings", "vehicles")
    (dest / "offsets/2").write_text("newer")
    (layout.savepoint("sp") / "stages/vehicles/commits/0").write_text("truncated")
    with pytest.raises(SavepointError, match="commits/0: 9 bytes, manifest says"):
        restore_stage(layout, "sp", "vehicles", dest)
    assert (dest / "offsets/2").read_text() == "newer"
    assert sorted(p.name for p in dest.parent.iterdir()) == ["vehicles", "windows"]

    def broken_copy(*args: Any) -> None:
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(copying, "copy_file", broken_copy)
    with pytest.raises(SavepointError, match="Input/output error"):
        restore_stage(layout, "sp", "windows", layout.checkpoint("fleet-pings", "windows"))
    assert sorted(p.name for p in dest.parent.iterdir()) == ["vehicles", "windows"]


def test_manifest_rejects_paths_outside_the_savepoint(layout: StateLayout) -> None:
    m = make(layout, "sp")
    doc = json.loads(m.model_dump_json())
    doc["checksums"][0]["path"] = "../../etc/passwd"
    with pytest.raises(ValueError, match="must stay inside the savepoint"):
        Manifest.model_validate(doc)


def test_a_live_copy_takes_the_committed_batch_only(layout: StateLayout) -> None:
    """Batch 2 is running (planned, state version 3 written, not committed): left out."""
    root = fake_checkpoint(layout, "fleet-pings", "windows")
    running = {"offsets/2": "v1\n{}\n{}", "state/0/0/3.delta": "z", "state/0/0/2.delta": "w",
               "state/0/1/2.delta": "w"}  # fmt: skip
    for rel, text in running.items():
        (root / rel).write_text(text)
    m = create_savepoint(layout, "live", job="fleet-pings", version="1",
                         stage_dirs={"windows": root},
                         stage_entries={"windows": entry(ALPHA)})  # fmt: skip
    copied = {f.path.removeprefix("stages/windows/") for f in m.checksums}
    assert copied == set(CHECKPOINT_FILES) | {"state/0/0/2.delta", "state/0/1/2.delta"}


def test_a_state_chain_with_a_gap_fails_the_savepoint(layout: StateLayout) -> None:
    root = fake_checkpoint(layout, "fleet-pings", "windows")
    (root / "state/0/0/3.delta").write_text("z")  # version 2 missing: 3 cannot be rebuilt
    with pytest.raises(SavepointError, match=r"batch 2 is incomplete.*state/0/0: version 2"):
        create_savepoint(layout, "gap", job="fleet-pings", version="1",
                         stage_dirs={"windows": root},
                         stage_entries={"windows": entry(ALPHA, batch_id=2)})  # fmt: skip
    assert savepoint_dir_names(layout) == []
