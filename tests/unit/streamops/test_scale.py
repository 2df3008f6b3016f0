"""The rolling scale through a fake operations port (:mod:`support.restart_fake`: the job
registry, the master client, and the nodes, whose workers are fake agents,
:mod:`support.nodes_fake`): its steps run in order through the step runner, the workers
change only through the port's node operations, and the intent records each step. No
cluster, nothing monkeypatched."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from support.restart_fake import FakeCluster, install, settings_at

from streamops.exceptions import ClusterError
from streamops.procedures import scale
from streamops.state.cluster_size import desired_workers


@pytest.fixture
def cluster(tmp_path: Path) -> FakeCluster:
    cluster = install(settings_at(tmp_path))
    cluster.workers = ["worker-1", "worker-2"]
    return cluster


def test_a_scale_from_two_to_three_workers_runs_its_steps_through_the_port(
    cluster: FakeCluster,
) -> None:
    result = scale.scale(cluster.ops, workers=3)
    assert (result.started, result.removed) == (("worker-3",), ())
    assert result.running == ("worker-1", "worker-2", "worker-3") == tuple(cluster.workers)
    assert cluster.calls == ["start worker-3", "master lists 3 ALIVE"]  # the port's nodes
    intent = scale.load_intent(cluster.settings)
    assert intent is not None and intent.finished and intent.owner == scale.CLI_OWNER
    assert (
        intent.done
        == list(scale.SCALE_STEPS)
        == ["change_workers", "confirm_in_master", "verify_batches_continue", "rebalance"]
    )
    assert intent.workers == 3 and intent.started == ["worker-3"]
    assert "fleet-pings" in intent.marks  # the running job, marked before a worker changed
    assert desired_workers(cluster.settings.layout) == 3
    assert scale.scale(cluster.ops, workers=3).started == ()  # again: nothing to start
    assert cluster.calls[2:] == ["master lists 3 ALIVE"]


def test_a_worker_removed_by_name_is_decommissioned_through_the_port(
    cluster: FakeCluster,
) -> None:
    result = scale.scale(cluster.ops, remove="worker-2", verify=False)
    assert result.removed == ("worker-2",) and cluster.workers == ["worker-1"]
    assert cluster.calls == ["decommission worker-2", "master lists 1 ALIVE"]
    intent = scale.load_intent(cluster.settings)
    assert intent is not None and intent.finished and intent.workers == 1
    assert intent.done == ["change_workers", "confirm_in_master"]


def test_a_port_without_nodes_cannot_scale(cluster: FakeCluster) -> None:
    with pytest.raises(ClusterError, match="reaches no node agents"):
        scale.scale(dataclasses.replace(cluster.ops, nodes=None), workers=3)
    assert cluster.workers == ["worker-1", "worker-2"] and cluster.calls == []
