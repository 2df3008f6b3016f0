"""Savepoints and upgrades on the real local cluster, checked against the journals.

v1 runs with both simulators → a savepoint without cancel (the job keeps going) → plans of
incompatible versions are refused with the job untouched → upgrade to v2 while data flows,
warm (v2's driver is up before v1 stops) → after the simulators stop, every sink equals its
batch recomputation: nothing lost or duplicated. The rollback of a version that crashes on
start runs the same upgrade steps through the DAG (tests/dags/test_job_dags.py), cold and as a
warm standby; the CLI's loop over those steps is covered by the unit tests of the steps.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from support.fleet import FleetRun
from support.integration import ClusterHandle, maps_file, pids_with_args, wait_until

from streamops.cluster.class_archives import ClassArchives
from streamops.procedures.savepoint_taking import savepoint_job
from streamops.procedures.upgrade import UpgradeRefused, plan_upgrade, upgrade
from streamops.state.savepoints import catalogue
from streamops.world.restore import earliest_positions
from streamops_contract.state.checkpoint_cut import last_batch

pytestmark = pytest.mark.integration
JOB = "fleet-upgrade-it"


def test_savepoint_upgrade_and_rollback(spark_cluster: ClusterHandle, tmp_path: Path) -> None:
    settings, registry = spark_cluster.settings, spark_cluster.registry
    # data flows through every step (no max) and is ended after the last one
    with FleetRun(spark_cluster, tmp_path, job=JOB, max_pings=1_000_000) as run:
        v2 = run.spec("fleet-pings-v2.yaml")
        run.submit()

        # a savepoint without cancel: the job continues
        result = savepoint_job(settings, JOB, "it-live", cancel=False)
        assert result.ok and registry.view(JOB).is_live
        manifest = catalogue.get_savepoint(settings.layout, "it-live")
        assert set(manifest.stages) == {"vehicles", "vehicle-stats-1m"}
        assert manifest.stages["vehicle-stats-1m"].stateful
        for name, stage in manifest.stages.items():  # the copy ends at its committed batch
            copy = settings.layout.savepoint("it-live") / "stages" / name
            assert last_batch(copy / "offsets") == last_batch(copy / "commits") == stage.batch_id
        assert "it-live" in [s.name for s in catalogue.list_savepoints(settings.layout, JOB)]
        wait_until(lambda: registry.view(JOB).healthy, 60, "v1 healthy after the savepoint")

        # incompatible versions are refused before anything stops
        for entry, why in (
            ("drill_jobs.fleet_pings_changed_accumulator", "vehicle-stats-1m"),
            ("drill_jobs.fleet_pings_renamed_stage", "vehicle-stats-1m"),
        ):
            bad = run.spec("fleet-pings-v2.yaml", entrypoint=entry, version="2-bad")
            plan = plan_upgrade(settings, JOB, bad)
            assert not plan.allowed and why in plan.render()
            with pytest.raises(UpgradeRefused):
                upgrade(settings, JOB, bad)
            view = registry.view(JOB)
            assert view.is_live and view.version == "1"

        plan = plan_upgrade(settings, JOB, v2)
        assert plan.allowed, plan.render()
        outcome = upgrade(settings, JOB, v2, health_timeout=300, warm=True)
        assert registry.view(JOB).version == "2"
        # v2's driver and executors started with the session's class archives mapped
        archives, view = ClassArchives.of(settings), registry.view(JOB)
        driver = pids_with_args("DriverWrapper", f"{view.driver_id}/")
        executors = pids_with_args("CoarseGrainedExecutorBackend", str(view.status.app_id))
        assert driver and all(maps_file(pid, archives.path("driver")) for pid in driver)
        assert executors and all(maps_file(p, archives.path("executor")) for p in executors)
        positions = earliest_positions(catalogue.get_savepoint(settings.layout, outcome.savepoint))

        run.end_data()
        run.finish_and_check(avg_speed_from=positions)
