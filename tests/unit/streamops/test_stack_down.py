"""``streamops down`` while an operation holds a job: refused with nothing stopped (an upgrade
cut by ``down`` would roll back onto a cluster going away), ``--wait`` queues behind it,
``--force`` stops anyway."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from streamops.exceptions import JobBusy
from streamops.procedures.job_lease import acting_as, job_operation
from streamops.settings import Settings
from streamops.stack import local_stack


@pytest.fixture
def stopped(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """What ``down`` stopped: Airflow, the services, the cluster (recorded, not run)."""
    calls: list[str] = []
    monkeypatch.setattr(local_stack.AirflowStack, "stop", lambda self: calls.append("airflow"))
    monkeypatch.setattr(local_stack, "stop_services", lambda settings: calls.append("services"))

    class Cluster:
        def __init__(self, *args: object) -> None:
            pass

        def status(self) -> object:
            return type("Status", (), {"master_alive": False})()

        def stop(self) -> None:
            calls.append("cluster")

    monkeypatch.setattr(local_stack, "LocalCluster", Cluster)
    return calls


def _settings(tmp_path: Path) -> Settings:
    settings = Settings.from_env({}, state_root=str(tmp_path))
    settings.layout.job_dir("fleet-pings").mkdir(parents=True)
    return settings


def test_down_is_refused_while_an_operation_holds_a_job(tmp_path: Path,
                                                        stopped: list[str]) -> None:
    settings = _settings(tmp_path)
    with acting_as("cli", "upgrading"), job_operation(settings, "fleet-pings", "upgrade to v2"):
        with pytest.raises(JobBusy, match=r"not stopped: 1 job\(s\) busy with an operation: "
                           r"fleet-pings: upgrade to v2 of cli run upgrading, pid \d+ .*--force"):
            local_stack.down(settings)
    assert stopped == []  # nothing stopped


def test_down_waits_for_the_operation_then_stops(tmp_path: Path, stopped: list[str]) -> None:
    settings = _settings(tmp_path)
    held = threading.Event()

    def operation() -> None:
        with acting_as("cli", "upgrading"), job_operation(settings, "fleet-pings", "upgrade"):
            held.set()
            time.sleep(1.5)

    thread = threading.Thread(target=operation)
    thread.start()
    held.wait(10)
    local_stack.down(settings, wait=30)
    thread.join()
    assert stopped == ["airflow", "services", "cluster"]


def test_down_force_stops_under_the_operation(tmp_path: Path, stopped: list[str]) -> None:
    settings = _settings(tmp_path)
    with acting_as("cli", "upgrading"), job_operation(settings, "fleet-pings", "upgrade to v2"):
        local_stack.down(settings, force=True)
    assert stopped == ["airflow", "services", "cluster"]
