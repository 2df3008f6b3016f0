"""The capacity arithmetic (:mod:`streamops.cluster.capacity`): what jobs need, N+1 after the
loss of the largest worker, and the applications waiting for cores, on a master's real
``/json/``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from streamops.cluster.capacity import (
    AppWait,
    Need,
    Node,
    app_waits,
    memory_mb,
    nodes_of_master,
    spare_check,
    wait_detail,
)
from streamops.spec import JobSpec, load_spec

CONFIG = Path(__file__).resolve().parents[3] / "config" / "jobs"
WAITING = Path(__file__).parent / "data" / "master_waiting.json"
"""Captured from a real master (2 workers x 2 cores, 2048 MB): ``transactions`` holds 3 cores
(1-core executors), ``fleet-pings`` is WAITING for a 2-core executor with 1 core free."""
IDS = {"worker-20261129031749-127.0.0.1-42197": "worker-1",
       "worker-20261129031749-127.0.0.1-38361": "worker-2"}  # fmt: skip


def master() -> dict[str, object]:
    return json.loads(WAITING.read_text())  # type: ignore[no-any-return]


def need(job: str, executor: int, max_cores: int, driver: int = 1, hot: bool = False) -> Need:
    return Need(job, driver, 1024, executor, 1024, max_cores, hot)


def test_memory_sizes() -> None:
    assert (memory_mb("1g"), memory_mb("512m"), memory_mb("2048k")) == (1024, 512, 2)
    with pytest.raises(ValueError, match="memory size"):
        memory_mb("lots")


def test_need_of_a_spec_counts_driver_and_whole_executors() -> None:
    spec = load_spec(CONFIG / "transactions.yaml")
    n = Need.of_spec(spec)
    assert (n.executors, n.cores) == (spec.resources.max_cores, 1 + spec.resources.max_cores)
    odd = need("odd", executor=2, max_cores=3)  # the master grants whole executors only
    assert (odd.executors, odd.cores) == (1, 3)
    hot = need("hot", executor=1, max_cores=2, hot=True)  # + standby driver, 3 executors
    assert hot.cores == 3 + 4


def test_hot_standby_spec_is_counted_twice() -> None:
    spec = load_spec(CONFIG / "fleet-pings.yaml")
    hot = JobSpec.model_validate({**spec.model_dump(mode="json"), "standby": "hot"})
    assert Need.of_spec(hot).hot_standby and Need.of_spec(hot).cores > Need.of_spec(spec).cores


def test_nodes_of_the_recorded_master() -> None:
    nodes = nodes_of_master(master(), IDS)
    assert [(n.name, n.cores, n.cores_free, n.memory_free) for n in nodes] == [
        ("worker-1", 2, 0, 1024), ("worker-2", 2, 1, 1536)]  # fmt: skip


def test_n_plus_one_holds_when_the_rest_holds_every_job() -> None:
    nodes = [Node("worker-1", 4, 4096), Node("worker-2", 4, 4096), Node("worker-3", 4, 4096)]
    check = spare_check(nodes, [need("fleet-pings", 1, 2), need("transactions", 1, 1)])
    assert check.ok and check.lost is not None
    assert (check.cores_needed, check.cores_left) == (5, 8)
    assert "N+1 holds" in check.summary()


def test_n_plus_one_refuses_the_issue_cluster_and_names_the_shortfall() -> None:
    """Two workers of 4 cores, fleet-pings (driver + one 2-core executor) and transactions
    (driver + 1): 5 cores, but one worker left has 4."""
    nodes = [Node("worker-1", 4, 4096), Node("worker-2", 4, 4096)]
    check = spare_check(nodes, [need("fleet-pings", 2, 2), need("transactions", 1, 1)])
    assert not check.ok
    text = check.shortfall()
    assert "after the loss of its largest worker worker-1 (4 cores)" in text
    assert "4 cores and 4096 MB left; the jobs need 5 cores (fleet-pings 3, transactions 2)" in text
    assert "no worker left holds" in text


def test_a_unit_larger_than_any_worker_left_fails_even_when_cores_add_up() -> None:
    nodes = [Node("big", 8, 8192), Node("a", 2, 4096), Node("b", 2, 4096)]
    check = spare_check(nodes, [need("wide", executor=3, max_cores=3)])
    assert (check.cores_needed, check.cores_left) == (4, 4)
    assert not check.ok and "wide's 3 cores executor" in check.shortfall()


def test_memory_counts_too() -> None:
    nodes = [Node("w1", 4, 2048), Node("w2", 4, 1024)]
    check = spare_check(nodes, [need("j", 1, 1)])  # 2 x 1024 MB on a 1024 MB worker
    assert not check.ok


def test_no_worker_at_all() -> None:
    check = spare_check([], [need("j", 1, 1)])
    assert not check.ok and "no worker at all" in check.shortfall()


def test_the_recorded_waiting_app_is_found_with_its_cause() -> None:
    now = 1795922303.129 + 40
    needs = {"fleet-pings": need("fleet-pings", 2, 2), "transactions": need("transactions", 1, 3)}
    waits = app_waits(master(), needs, now)
    assert waits == [AppWait("fleet-pings", "app-20261129031823-0001", "WAITING", 0, 2, 2, 512,
                             pytest.approx(40.0))]  # fmt: skip
    text = wait_detail(waits[0], nodes_of_master(master(), IDS), "streamops scale --add worker-3")
    assert text.startswith("fleet-pings waits for a 2-core executor (512 MB): 0 of 2 cores "
                           "granted, application app-20261129031823-0001 WAITING for 40 s")
    assert "1 core (1536 MB) on worker-2" in text and "0 cores (1024 MB) on worker-1" in text
    assert text.endswith("add a worker (`streamops scale --add worker-3`) or cancel a job "
                         "(`streamops cancel <job>`)")  # fmt: skip


def test_an_app_with_some_cores_runs_smaller_and_one_with_all_is_not_listed() -> None:
    needs = {"fleet-pings": need("fleet-pings", 1, 2), "transactions": need("transactions", 1, 4)}
    doc = master()
    doc["activeapps"][1]["cores"] = 1  # type: ignore[index]
    waits = {w.job: w for w in app_waits(doc, needs, 0)}
    assert set(waits) == {"fleet-pings", "transactions"}
    assert not waits["fleet-pings"].down and waits["transactions"].granted == 3
    text = wait_detail(waits["fleet-pings"], [], "streamops scale --workers 3")
    assert text.startswith("fleet-pings runs smaller: 1 of 2 cores granted")
    needs["transactions"] = need("transactions", 1, 3)
    assert [w.job for w in app_waits(doc, needs, 0)] == ["fleet-pings"]


def test_room_now_is_said_so() -> None:
    wait = AppWait("j", "app-1", "WAITING", 0, 1, 1, 512, 3.0)
    text = wait_detail(wait, [Node("worker-2", 4, 4096, 2, 2048)], "x")
    assert "room for it on worker-2 now" in text


def test_cluster_status_lists_the_waiting_application(tmp_path: Path) -> None:
    import io

    from rich.console import Console

    from streamops.cli.cluster_cmds import print_status
    from streamops.cluster.status import build_status
    from streamops.settings import Settings

    settings = Settings.from_env({}, state_root=str(tmp_path))
    out = io.StringIO()
    print_status(build_status(settings, {}, master()), Console(file=out, width=160))
    [row] = [line for line in out.getvalue().splitlines() if "fleet-pings" in line]
    assert "app-20261129031823-0001" in row and "WAITING" in row and " 0 " in row
