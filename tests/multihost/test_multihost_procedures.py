"""The longer procedures across hosts (network namespaces, as ``test_multihost.py``), kept out
of the default run (``slow``): ``./scripts/test.sh -m slow tests/multihost``.

- an upgrade v1 → v2 with a warm standby: the standby's driver on another host, armed, then
  released from the savepoint;
- a full cluster restart switching the jar release r1 → r2: every node stopped and started
  again through its agent on its own host, the job restored from its savepoint;
- the oracle over both: nothing lost, nothing twice.
"""

from __future__ import annotations

import time

import pytest
from support.integration import describe_job, wait_until
from support.multihost import HostFleet, MultiHost

from streamops.cluster.client import MasterClient
from streamops.cluster.releases import ReleaseStore
from streamops.procedures import cluster_restart
from streamops.procedures.upgrade import upgrade

pytestmark = [pytest.mark.integration, pytest.mark.multihost, pytest.mark.slow]


def test_upgrade_with_a_warm_standby_across_hosts(hosts: MultiHost, fleet: HostFleet) -> None:
    started = time.monotonic()
    outcome = upgrade(hosts.settings, fleet.job, fleet.spec("fleet-pings-v2.yaml"),
                      health_timeout=300, standby="warm")  # fmt: skip
    view = hosts.registry.view(fleet.job)
    assert view.version == "2" and view.healthy, describe_job(view)
    print(f"FIGURE upgrade v1 → v2 with a warm standby across hosts: savepoint "
          f"{outcome.savepoint_s:.1f}s, start {outcome.start_s:.1f}s "
          f"in {time.monotonic() - started:.1f}s; driver on "
          f"{hosts.node_of_driver(str(view.driver_id))}")


def test_full_restart_with_a_jar_swap_across_hosts(hosts: MultiHost, fleet: HostFleet) -> None:
    started = time.monotonic()
    cluster_restart.restart(hosts.settings, "r2")
    assert ReleaseStore(hosts.settings).active() == "r2"
    assert len(hosts.alive_workers()) == 3
    addresses = {h.address for n, h in hosts.hosts.items() if n.startswith("worker-")}
    assert set(hosts.alive_workers()) == addresses  # each on its own host again
    wait_until(lambda: hosts.registry.view(fleet.job).healthy, 300, "the job restored",
               describe=lambda: describe_job(hosts.registry.view(fleet.job)))  # fmt: skip
    assert MasterClient(hosts.settings).state().get("status") == "ALIVE"
    print(f"FIGURE full restart r1 → r2 across hosts: job healthy again "
          f"{time.monotonic() - started:.1f}s after the restart began")
    fleet.finish_and_check()
