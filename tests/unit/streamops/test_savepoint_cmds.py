"""The savepoint verbs of the CLI: ``list-snapshots``, ``delete-snapshot``, ``retain``."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import pytest

from streamops.cli import savepoint_cmds
from streamops.cli.savepoint_cmds import human_bytes, parse_duration
from streamops.exceptions import ConfigError, SavepointProtected
from streamops.settings import Settings
from streamops.state.layout import StateLayout, write_json_atomic
from streamops.state.savepoints.catalogue import get_savepoint, list_savepoints
from streamops_contract.state.savepoints.create import create_savepoint


@pytest.fixture
def settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Settings:
    monkeypatch.setenv("COLUMNS", "200")
    return Settings.from_env({}, state_root=str(tmp_path / "state"))


def run(settings: Settings, *argv: str) -> int:
    parser = argparse.ArgumentParser(prog="streamops")
    savepoint_cmds.register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return int(args.handler(args, settings))


def savepoint(layout: StateLayout, name: str, job: str, age_s: float, size: int = 2048,
              code: str | None = None) -> None:
    checkpoint = layout.checkpoint(job, "vehicles")
    (checkpoint / "offsets").mkdir(parents=True, exist_ok=True)
    (checkpoint / "metadata").write_text('{"id":"1"}')
    (checkpoint / "offsets" / "0").write_text("x" * (size - 10))
    create_savepoint(layout, name, job=job, version="2", stage_dirs={"vehicles": checkpoint},
                     stage_entries={"vehicles": {"batch_id": 0}}, code=code)  # fmt: skip
    manifest = get_savepoint(layout, name).model_copy(update={"created_at": time.time() - age_s})
    write_json_atomic(layout.savepoint(name) / "manifest.json", manifest.model_dump())


@pytest.fixture
def three(settings: Settings) -> StateLayout:
    layout = settings.layout
    savepoint(layout, "pings-old", "fleet-pings", 3 * 86400)
    savepoint(layout, "pings-new", "fleet-pings", 60)
    savepoint(layout, "trades-1", "trades", 3600, size=3 * 1024 * 1024,
              code="trades-0123456789ab.zip")
    return layout


def test_list_snapshots_table(
    settings: Settings, three: StateLayout, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(settings, "list-snapshots") == 0
    out = capsys.readouterr().out
    header = next(line for line in out.splitlines() if "TIME" in line)
    assert header.split() == ["TIME", "SIZE", "JOB", "NAME", "VERSION", "STAGES"]
    rows = [line for line in out.splitlines() if "fleet-pings" in line or "trades " in line]
    assert [r.split()[4] for r in rows] == ["pings-new", "trades-1", "pings-old"]
    assert "2.0 KiB" in rows[0] and "3.0 MiB" in rows[1]
    assert "vehicles" in rows[0]
    assert "2 (trades-0123456789ab.zip)" in rows[1]  # a job's own code: the version it ran


def test_list_snapshots_of_one_job_as_json(
    settings: Settings, three: StateLayout, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(settings, "list-snapshots", "fleet-pings", "--json") == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["name"] for r in rows] == ["pings-new", "pings-old"]
    assert rows[0]["job"] == "fleet-pings" and rows[0]["version"] == "2"
    assert rows[0]["stages"] == ["vehicles"] and rows[0]["bytes"] > 2000
    assert rows[0]["path"] == str(three.savepoint("pings-new"))
    assert rows[0]["time"].startswith(time.strftime("%Y-"))


def test_list_snapshots_when_there_are_none(
    settings: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(settings, "list-snapshots", "fleet-pings") == 0
    assert "no savepoints of job fleet-pings in" in capsys.readouterr().out


def test_delete_snapshot(
    settings: Settings, three: StateLayout, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(settings, "delete-snapshot", "pings-old") == 0
    assert "savepoint pings-old deleted" in capsys.readouterr().out
    assert [i.name for i in list_savepoints(three)] == ["pings-new", "trades-1"]


def test_delete_snapshot_refuses_what_a_running_job_started_from(
    settings: Settings, three: StateLayout
) -> None:
    write_json_atomic(three.status_file("fleet-pings"),
                      {"state": "RUNNING", "from_savepoint": "pings-old"})  # fmt: skip
    with pytest.raises(SavepointProtected, match=r"job 'fleet-pings' \(RUNNING\) was started"):
        run(settings, "delete-snapshot", "pings-old")
    assert len(list_savepoints(three)) == 3


def test_retain_dry_run_then_for_real(
    settings: Settings, three: StateLayout, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(settings, "retain", "--max-age", "1d", "--dry-run") == 0
    assert "retain: would delete 1 savepoint(s): pings-old" in capsys.readouterr().out
    assert len(list_savepoints(three)) == 3
    assert run(settings, "retain", "--keep-last", "1") == 0
    assert "retain: deleted 1 savepoint(s): pings-old" in capsys.readouterr().out
    assert [i.name for i in list_savepoints(three)] == ["pings-new", "trades-1"]
    assert run(settings, "retain", "--keep-last", "1", "--max-age", "30m") == 0
    assert "retain: nothing to delete" in capsys.readouterr().out


def test_retain_keeps_what_running_jobs_started_from(
    settings: Settings, three: StateLayout, capsys: pytest.CaptureFixture[str]
) -> None:
    write_json_atomic(three.status_file("fleet-pings"),
                      {"state": "STARTING", "from_savepoint": "pings-old"})  # fmt: skip
    assert run(settings, "retain", "--keep-last", "1") == 0
    out = capsys.readouterr().out
    assert "retain: nothing to delete" in out
    assert "protected (running jobs were started from them): pings-old" in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ((), "give --keep-last N and/or --max-age"),
        (("--keep-last", "0"), "--keep-last 0: keep at least 1"),
        (("--max-age", "7 days"), "--max-age '7 days': expected a number and a unit"),
    ],
)
def test_retain_refuses_bad_options(
    settings: Settings, argv: tuple[str, ...], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        run(settings, "retain", *argv)


def test_parse_duration_and_human_bytes() -> None:
    assert [parse_duration(t) for t in ("45s", "30m", "12h", "7d", "2w", "1.5h")] == [
        45, 1800, 43200, 604800, 1209600, 5400
    ]  # fmt: skip
    assert [human_bytes(n) for n in (0, 1023, 1024, 1536, 5 * 2**20, 3 * 2**40)] == [
        "0 B", "1023 B", "1.0 KiB", "1.5 KiB", "5.0 MiB", "3.0 TiB"
    ]  # fmt: skip
