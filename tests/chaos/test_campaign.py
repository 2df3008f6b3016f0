"""The short chaos campaign: faults and procedures drawn by a seeded generator, one after
another on one fleet-pings job of the session's cluster while both simulators flow, the
oracle and health judged after every step (``support/chaos/campaign.py``).

The seed is ``STREAMOPS_CHAOS_SEED`` (default below); a failure prints it and how to replay
it. ``STREAMOPS_CHAOS_ONLY=node,master`` runs those actions in that order instead, and
``STREAMOPS_CHAOS_KEEP_GOING=1`` goes on past a failed step. After the drawn steps, two faults
in the middle of a procedure: the job's node killed while a warm cluster restart hands it over
(``node-mid-handover``), and Airflow's PostgreSQL killed in the middle of an upgrade DAG run
(``airflow-db``; the world's Airflow is started for it).

The long campaign, with the procedures this one leaves out (scale, upgrade and back,
cluster restart), is ``tests/perf/chaos_soak.py --steps 60 --seed N``.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from support.chaos.campaign import draw, replay_hint, run_campaign
from support.chaos.world import ChaosWorld
from support.integration import ClusterHandle

from streamops.procedures.submit import submit_job

pytestmark = [pytest.mark.integration, pytest.mark.timeout(2400)]
STEPS = 8
DEFAULT_SEED = 1
"""Draws alpha-late, cli-killed, node, restart-checkpoint, beta-cut, master, beta-restart,
beta-log-lost."""
LAST = ("node-mid-handover", "airflow-db")


def test_short_chaos_campaign(
    spark_cluster: ClusterHandle, tmp_path: Path, free_port: Callable[[], int]
) -> None:
    seed = int(os.environ.get("STREAMOPS_CHAOS_SEED", DEFAULT_SEED))
    world = ChaosWorld(spark_cluster, tmp_path, free_port(), airflow_port=free_port())
    world.start()
    reports: list = []
    try:
        submit_job(world.spec(), world.settings, wait_healthy=300)
        only = [n for n in os.environ.get("STREAMOPS_CHAOS_ONLY", "").split(",") if n]
        only = only or [a.name for a in draw(seed, STEPS, short=True)] + list(LAST)
        keep_going = os.environ.get("STREAMOPS_CHAOS_KEEP_GOING") == "1"
        run_campaign(world, seed, len(only), short=True, only=only, out=reports,
                     stop_at_failure=not keep_going)
    finally:
        world.stop()
    print("\n" + "\n".join(r.line() for r in reports))
    failed = [r for r in reports if not r.ok]
    assert not failed, f"{replay_hint(seed, STEPS)}\n" + "\n".join(r.line() for r in failed)
    assert len(reports) == len(only)
