"""The longer procedures across hosts (network namespaces, as ``test_multihost.py``), driven
as users drive them: through the DAGs of an Airflow that runs on the master's host (its
embedded PostgreSQL, api-server, scheduler, dag-processor and triggerer there, at that host's
address), triggered over its REST API from the operator's machine. In the default run
(``slow``); the multi-host modules alone: ``./scripts/test.sh -m multihost tests/multihost``.

- ``savepoint_and_upgrade`` v1 → v2 with a warm standby: the standby's driver started on a
  host the master picks, armed, then released from the savepoint; the hosts of the old and
  the new driver are printed;
- ``cluster_restart`` switching the jar release r1 → r2: every node stopped and started again
  through its agent on its own host (the master's host keeps Airflow running), the job
  restored from its savepoint;
- the oracle over both: nothing lost, nothing twice.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from support.airflow_api import Api
from support.integration import describe_job, wait_until
from support.multihost import HostFleet, MultiHost

from streamops.cluster.client import MasterClient
from streamops.cluster.releases import ReleaseStore

pytestmark = [pytest.mark.integration, pytest.mark.multihost, pytest.mark.slow]


@pytest.fixture(scope="module")
def airflow(hosts: MultiHost) -> Iterator[Api]:
    started = time.monotonic()
    stack = hosts.start_airflow()
    try:
        print(f"FIGURE Airflow up on the master's host ({stack.options.url}) in "
              f"{time.monotonic() - started:.1f}s")
        yield Api(stack)
    finally:
        stack.stop()
        assert stack.database.postgres.pid() is None, "Airflow's PostgreSQL runs on"


def _run(api: Api, dag: str, conf: dict[str, object]) -> tuple[dict[str, str], float]:
    started = time.monotonic()
    run_id = api.trigger(dag, conf)
    state = api.wait_finished(dag, run_id, timeout=900)
    tasks = api.task_states(dag, run_id)
    assert state == "success", f"{dag} run {run_id} ended {state}: {tasks}"
    return tasks, time.monotonic() - started


def test_upgrade_with_a_warm_standby_across_hosts(hosts: MultiHost, fleet: HostFleet,
                                                   airflow: Api) -> None:  # fmt: skip
    old = hosts.registry.view(fleet.job)
    old_host = hosts.node_of_driver(str(old.driver_id))
    spec = fleet.spec_file("fleet-pings-v2.yaml")
    tasks, took = _run(airflow, "savepoint_and_upgrade",
                       {"job": fleet.job, "spec": str(spec), "standby": "warm"})  # fmt: skip
    assert tasks["start_standby"] == "success", tasks
    view = hosts.registry.view(fleet.job)
    assert view.version == "2" and view.healthy, describe_job(view)
    new_host = hosts.node_of_driver(str(view.driver_id))
    print(f"FIGURE savepoint_and_upgrade v1 → v2 (warm standby) across hosts through Airflow "
          f"on the master's host: {took:.1f}s; old driver on {old_host}, new on {new_host}")


def test_full_restart_with_a_jar_swap_across_hosts(hosts: MultiHost, fleet: HostFleet,
                                                    airflow: Api) -> None:  # fmt: skip
    tasks, took = _run(airflow, "cluster_restart", {"release": "r2", "path": "full"})
    assert ReleaseStore(hosts.settings).active() == "r2"
    assert len(hosts.alive_workers()) == 3
    addresses = {h.address for n, h in hosts.hosts.items() if n.startswith("worker-")}
    assert set(hosts.alive_workers()) == addresses  # each on its own host again
    wait_until(lambda: hosts.registry.view(fleet.job).healthy, 300, "the job restored",
               describe=lambda: describe_job(hosts.registry.view(fleet.job)))  # fmt: skip
    assert MasterClient(hosts.settings).state().get("status") == "ALIVE"
    print(f"FIGURE cluster_restart r1 → r2 across hosts through Airflow on the master's host: "
          f"{took:.1f}s ({len(tasks)} tasks)")
    fleet.finish_and_check()
