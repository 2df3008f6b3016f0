"""Node agents on the session cluster with a live fleet job: scale 2 → 3 → 2 workers, then
a graceful restart r1 → r2 by the warm path (the job handed over, no daemon stopped, the
release visible in its status and output) and back to r1 by the full path (every daemon
stopped and started, the job restored), so the session cluster is left as found; nothing
lost, nothing duplicated (the oracle). Figures (wall time, processing gap) are printed, not
asserted.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from sqlalchemy import select
from support.fleet import FleetRun
from support.gaps import processing_gap, settle_and_check
from support.integration import ClusterHandle, wait_until

from spark_jobs.sinks import store
from streamops.agent.registry import Agents
from streamops.cluster.releases import ReleaseStore
from streamops.procedures import cluster_restart, scale

# The same procedures run end to end through the DAGs in tests/dags/test_cluster_dags.py (in
# CI); this CLI-level drill repeats them and is kept out of the default run: -m slow.
pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(2400)]
JOB = "fleet-agents-it"


def releases_in_output(store_url: str) -> list[str]:
    with store.engine_for(store_url).connect() as conn:
        rows = conn.execute(select(store.job_releases).order_by(store.job_releases.c.started_at))
        return [r.classpath_release for r in rows if r.job == JOB]


def test_scale_and_full_restart_switching_the_jar_release(
    spark_cluster: ClusterHandle, tmp_path: Path
) -> None:
    settings, registry = spark_cluster.settings, spark_cluster.registry
    agents = Agents(settings)
    assert ReleaseStore(settings).active() == "r1"
    assert scale.running_workers(agents) == ["worker-1", "worker-2"]
    assert "worker-3" in agents.workers()  # a spare agent, idle until the scale-up
    figures: list[str] = []

    def measured(what: str, action: object) -> None:
        t0, w0 = time.time(), time.monotonic()
        marks = scale.batch_marks(settings)
        action()  # type: ignore[operator]
        scale.verify_batches_continue(settings, marks)
        gap = processing_gap(settings.layout, JOB, t0, time.time())
        figures.append(f"{what}: {time.monotonic() - w0:.1f}s, processing gap {gap:.1f}s")

    with FleetRun(spark_cluster, tmp_path, job=JOB, max_pings=18000) as run:
        run.submit()
        wait_until(lambda: registry.view(JOB).status.classpath_release == "r1", 120,
                   "the job to report classpath release r1")

        measured("scale 2→3", lambda: scale.scale_to(settings, 3))
        assert len(scale.alive_in_master(settings)) == 3
        measured("scale 3→2", lambda: scale.scale_to(settings, 2))
        assert len(scale.alive_in_master(settings)) == 2
        assert len(scale.running_workers(agents)) == 2

        measured("restart r1→r2 (warm)", lambda: cluster_restart.restart(settings, "r2"))
        assert ReleaseStore(settings).active() == "r2"
        assert registry.view(JOB).healthy
        wait_until(lambda: registry.view(JOB).status.classpath_release == "r2", 120,
                   "the job to report classpath release r2")  # a start-up hook, asynchronous
        intent = cluster_restart.load_intent(settings)
        assert intent is not None and intent.phase == "done" and intent.restored == [JOB]
        assert intent.path == "warm"

        measured("restart r2→r1 (full)",
                 lambda: cluster_restart.restart(settings, "r1", path="full"))
        intent = cluster_restart.load_intent(settings)
        assert intent is not None and intent.path == "full" and intent.restored == [JOB]
        wait_until(lambda: registry.view(JOB).status.classpath_release == "r1", 120,
                   "the job to report classpath release r1")
        assert releases_in_output(run.store_url)[-3:] == ["r1", "r2", "r1"]

        settle_and_check(run)
    print("\n" + "\n".join(figures))
    assert ReleaseStore(settings).active() == "r1"
    assert len(scale.alive_in_master(settings)) == 2
