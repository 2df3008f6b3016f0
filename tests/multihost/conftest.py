"""The multi-host fixtures: a cluster across network namespaces per module, and fleet-pings
deployed on it. Skipped, with the reason, where namespaces cannot be made."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from support.multihost import HostFleet, MultiHost, multihost_cluster
from support.netns import NetnsUnavailable, unavailable_reason

from streamops.world.submit import submit_job


@pytest.fixture(scope="module")
def hosts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MultiHost]:
    reason = unavailable_reason()
    if reason is not None:
        pytest.skip(f"multi-host tests need network namespaces: {reason}")
    try:
        with multihost_cluster(tmp_path_factory.mktemp("multihost")) as cluster:
            yield cluster
    except NetnsUnavailable as exc:
        pytest.skip(f"multi-host tests need network namespaces: {exc}")


@pytest.fixture(scope="module")
def fleet(hosts: MultiHost) -> Iterator[HostFleet]:
    """fleet-pings deployed across the hosts (the simulators on theirs), healthy."""
    run = HostFleet(hosts)
    run.start_simulators()
    started = time.monotonic()
    submit_job(run.spec(), hosts.settings, wait_healthy=300)
    print(f"FIGURE deployed across hosts: healthy {time.monotonic() - started:.1f}s after submit")
    yield run
