"""Admission through the CLI: ``submit``, ``restore``, ``upgrade``, ``apply`` and a scale-down
refuse an operation after which the cluster would not hold every job once its largest worker
is lost (N+1), naming the shortfall; ``--allow-no-spare`` goes on with a warning.

The master is a loopback HTTP server answering ``/json/`` with a real master's document
(captured, ``tests/unit/cluster/data/master_waiting.json``) resized to the issue's cluster:
two workers of 4 cores, ``transactions`` running (a driver and a 1-core executor)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.master_doc import issue_master, serving

from streamops.admission import admit
from streamops.cli import main
from streamops.cluster.submission import record_submission
from streamops.exceptions import CapacityShortfall
from streamops.settings import Settings
from streamops.spec import load_spec

CONFIG = Path(__file__).resolve().parents[3] / "config" / "jobs"


@pytest.fixture
def master() -> Iterator[int]:
    with serving(issue_master()) as port:
        yield port


@pytest.fixture
def settings(master: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Settings:
    monkeypatch.setenv("STREAMOPS_MASTER_WEBUI_PORT", str(master))
    monkeypatch.setenv("STREAMOPS_STATE_ROOT", str(tmp_path / "state"))
    settings = Settings.from_env()
    record_submission(settings, load_spec(CONFIG / "transactions.yaml"), "driver-1")
    return settings


SHORTFALL = ("refused: no spare capacity (N+1): after the loss of its largest worker "
             "127.0.0.1:")  # fmt: skip


@pytest.mark.parametrize("argv", [
    ["submit", str(CONFIG / "fleet-pings.yaml")],
    ["restore", str(CONFIG / "fleet-pings.yaml"), "sp-1"],
    ["upgrade", "transactions", str(CONFIG / "trade-analyser-v1.yaml")],
    ["scale", "--remove", "127.0.0.1:38361"],
])  # fmt: skip
def test_the_cli_refuses_naming_the_shortfall(
    settings: Settings, argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and SHORTFALL in err, err
    assert "(4 cores) the cluster has " in err and "--allow-no-spare" in err
    assert "Nothing was changed" in err


def test_submit_names_cores_needed_against_those_left(
    settings: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    """fleet-pings (a driver and 2 executor cores) beside transactions (2): 5 cores, and one
    worker of 4 is left."""
    assert main(["submit", str(CONFIG / "fleet-pings.yaml")]) == 2
    err = capsys.readouterr().err
    assert "the cluster has 4 cores and 4096 MB left; the jobs need 5 cores" in err
    assert "(fleet-pings 3, transactions 2)" in err


def test_apply_refuses_a_deployment_that_leaves_no_spare(
    settings: Settings, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    deployment = tmp_path / "fleet.yaml"
    deployment.write_text(f"kind: JobDeployment\nname: fleet-pings\n"
                          f"spec_file: {CONFIG / 'fleet-pings.yaml'}\n")  # fmt: skip
    assert main(["apply", "-f", str(deployment)]) == 2
    assert "apply of fleet-pings refused" in capsys.readouterr().err
    stored = [p for p in Path(settings.state_root).rglob("*") if "fleet-pings" in p.name]
    assert not stored  # nothing applied


def test_a_fitting_operation_and_the_flag_go_on(
    settings: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    small = load_spec(CONFIG / "transactions-v2.yaml")  # replaces transactions: 2 cores
    check = admit(settings, "upgrade of transactions", specs=[small])
    assert check is not None and check.ok
    fleet = load_spec(CONFIG / "fleet-pings.yaml")
    with pytest.raises(CapacityShortfall):
        admit(settings, "submit of fleet-pings", specs=[fleet])
    with caplog.at_level(logging.WARNING, "streamops.admission"):
        check = admit(settings, "submit of fleet-pings", specs=[fleet], allow_no_spare=True)
    assert check is not None and not check.ok
    assert "going on without a spare (--allow-no-spare)" in caplog.text


def test_a_scale_up_is_not_checked_and_a_silent_master_skips_the_check(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    settings = Settings.from_env({}, state_root=str(tmp_path), master_webui_port=1)
    with caplog.at_level(logging.WARNING, "streamops.admission"):
        fleet = load_spec(CONFIG / "fleet-pings.yaml")
        assert admit(settings, "submit of fleet-pings", specs=[fleet]) is None
    assert "capacity not checked, the master does not answer" in caplog.text
